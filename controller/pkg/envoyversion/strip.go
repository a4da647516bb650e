package envoyversion

import (
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"isobar.dev/api/imagetag"
)

// Strip returns resource, of type typeURL, as an Envoy of class is sent
// it: without the fields Newer lists that class lacks. It returns
// resource itself when it holds none of them, and a copy otherwise.
func Strip(typeURL string, resource proto.Message, class string) proto.Message {
	if s := Stripper(typeURL, class); s != nil {
		return s(resource)
	}
	return resource
}

// Stripper returns what Strip does to resources of type typeURL for
// Envoys of class, or nil when that is nothing: resources of that type
// never hold a field the class lacks.
func Stripper(typeURL, class string) func(proto.Message) proto.Message {
	if class == "" {
		return nil
	}
	lacks := map[protoreflect.FullName]bool{}
	for _, f := range Newer {
		if slices.Contains(f.In, typeURL) && !f.Since.Less(sinceOf(class)) {
			lacks[f.Name] = true
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	return func(resource proto.Message) proto.Message {
		if !holds(resource.ProtoReflect(), lacks) {
			return resource
		}
		out := proto.Clone(resource)
		strip(out.ProtoReflect(), lacks)
		return out
	}
}

// sinceOf is the release a class names.
func sinceOf(class string) (v imagetag.Version) {
	for _, f := range Newer {
		if className(f.Since) == class {
			return f.Since
		}
	}
	return v
}

// holds reports whether m sets one of the fields.
func holds(m protoreflect.Message, fields map[protoreflect.FullName]bool) bool {
	found := false
	Walk(m.Interface(), func(n protoreflect.FullName) {
		found = found || fields[n]
	})
	return found
}

// strip clears the fields in m and what it holds; an Any that held one is
// packed again.
func strip(m protoreflect.Message, fields map[protoreflect.FullName]bool) bool {
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err != nil || !strip(inner.ProtoReflect(), fields) {
			return false
		}
		packed, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner)
		if err != nil {
			return false
		}
		a.Value = packed
		return true
	}
	changed := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fields[fd.FullName()] {
			m.Clear(fd)
			changed = true
			return true
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				changed = strip(l.Get(i).Message(), fields) || changed
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				changed = strip(mv.Message(), fields) || changed
				return true
			})
		case fd.Message() != nil:
			changed = strip(v.Message(), fields) || changed
		}
		return true
	})
	return changed
}
