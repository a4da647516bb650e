package xds_test

import (
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/xds"
)

// goldenResources are the Envoy resources of every golden case.
func goldenResources(t *testing.T) []proto.Message {
	t.Helper()
	files, err := filepath.Glob("../offline/testdata/*.in.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden inputs: %v", err)
	}
	var out []proto.Message
	for _, f := range files {
		r, err := offline.TranslateFiles(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range r.XDS {
			for _, m := range g.Listeners {
				out = append(out, m)
			}
			for _, m := range g.Routes {
				out = append(out, m)
			}
			for _, m := range g.Clusters {
				out = append(out, m)
			}
			for _, m := range g.Endpoints {
				out = append(out, m)
			}
			for _, m := range g.Secrets {
				out = append(out, m)
			}
		}
	}
	return out
}

// Equal must agree with proto.Equal: on copies, on copies that share
// sub-messages, and on copies changed in their deepest string.
func TestEqualAgreesWithProtoEqual(t *testing.T) {
	for _, m := range goldenResources(t) {
		name := string(m.ProtoReflect().Descriptor().Name())
		c := proto.Clone(m)
		if !xds.Equal(m, c) || !xds.Equal(c, m) {
			t.Errorf("%s: a clone is not equal", name)
		}
		if !xds.Equal(m, shallow(m)) {
			t.Errorf("%s: a copy sharing sub-messages is not equal", name)
		}
		if !deepestString(c.ProtoReflect()) {
			continue
		}
		if proto.Equal(m, c) || xds.Equal(m, c) || xds.Equal(c, m) {
			t.Errorf("%s: a change in its deepest string goes unnoticed (proto.Equal %v)", name, proto.Equal(m, c))
		}
	}
	if !xds.Equal(nil, nil) || xds.Equal(nil, goldenResources(t)[0]) {
		t.Error("nil handling")
	}
}

func shallow(m proto.Message) proto.Message {
	src := m.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	return dst.Interface()
}

// deepestString appends to the most deeply nested populated string field
// and reports whether it found one.
func deepestString(m protoreflect.Message) bool {
	changed := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			changed = deepestString(l.Get(l.Len() - 1).Message())
		case fd.Message() != nil && !fd.IsList():
			changed = deepestString(v.Message())
		}
		return !changed
	})
	if changed {
		return true
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() {
			m.Set(fd, protoreflect.ValueOfString(v.String()+"-changed"))
			changed = true
		}
		return !changed
	})
	return changed
}
