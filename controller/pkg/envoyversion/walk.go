package envoyversion

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// Walk calls f with the full name of every field set in m, and in the
// messages m holds, those packed in an Any included (an Envoy extension's
// typed config): every field a resource sends Envoy. It also names each
// message type packed in an Any and each enum value set, which an older
// Envoy may not know either.
func Walk(m proto.Message, f func(protoreflect.FullName)) {
	walk(m.ProtoReflect(), f)
}

func walk(m protoreflect.Message, f func(protoreflect.FullName)) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		if inner, err := a.UnmarshalNew(); err == nil {
			f(inner.ProtoReflect().Descriptor().FullName())
			walk(inner.ProtoReflect(), f)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		f(fd.FullName())
		switch {
		case fd.Enum() != nil && fd.IsList():
			l := v.List()
			for i := range l.Len() {
				enumValue(fd, l.Get(i).Enum(), f)
			}
		case fd.Enum() != nil && !fd.IsMap():
			enumValue(fd, v.Enum(), f)
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				walk(l.Get(i).Message(), f)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				walk(mv.Message(), f)
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			walk(v.Message(), f)
		}
		return true
	})
}

func enumValue(fd protoreflect.FieldDescriptor, n protoreflect.EnumNumber, f func(protoreflect.FullName)) {
	if ev := fd.Enum().Values().ByNumber(n); ev != nil {
		f(ev.FullName())
	}
}
