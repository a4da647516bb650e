package xds

import (
	"bytes"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Equal reports whether two resources are equal, as proto.Equal does, but
// takes a message that is the same object on both sides as equal without
// walking it. Successive translations share the messages of what did not
// change (a listener's filter chains, an unchanged route configuration),
// where proto.Equal walks every field of both; an encoded route
// configuration that changed compares as one run of bytes.
func Equal(a, b proto.Message) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equalMessage(a.ProtoReflect(), b.ProtoReflect())
}

func equalMessage(a, b protoreflect.Message) bool {
	if a.Interface() == b.Interface() {
		return true
	}
	if a.Descriptor() != b.Descriptor() || a.IsValid() != b.IsValid() {
		return false
	}
	equal, fields := true, 0
	a.Range(func(fd protoreflect.FieldDescriptor, va protoreflect.Value) bool {
		fields++
		equal = b.Has(fd) && equalField(fd, va, b.Get(fd))
		return equal
	})
	if !equal {
		return false
	}
	b.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		fields--
		return true
	})
	return fields == 0 && bytes.Equal(a.GetUnknown(), b.GetUnknown())
}

func equalField(fd protoreflect.FieldDescriptor, a, b protoreflect.Value) bool {
	switch {
	case fd.IsMap():
		return a.Equal(b)
	case fd.IsList() && fd.Message() != nil:
		la, lb := a.List(), b.List()
		if la.Len() != lb.Len() {
			return false
		}
		for i := range la.Len() {
			if !equalMessage(la.Get(i).Message(), lb.Get(i).Message()) {
				return false
			}
		}
		return true
	case fd.Message() != nil && !fd.IsList():
		return equalMessage(a.Message(), b.Message())
	default:
		return a.Equal(b)
	}
}
