package envoysim

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// understand returns an error naming the first field set in m that is not
// in known: the fields the simulator interprets and those it knows do not
// change a request's fate. Anything else would make its answer a guess.
func understand(m proto.Message, known ...string) error {
	var bad protoreflect.FullName
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if !slices.Contains(known, string(fd.Name())) {
			bad = fd.FullName()
			return false
		}
		return true
	})
	if bad != "" {
		return fmt.Errorf("%s is set, and the simulator does not interpret it", bad)
	}
	return nil
}

// unpack opens a typed_config of the expected type.
func unpack[T any, P interface {
	*T
	proto.Message
}](a *anypb.Any, where string) (P, error) {
	m := P(new(T))
	if a == nil {
		return nil, fmt.Errorf("%s has no typed_config", where)
	}
	if err := a.UnmarshalTo(m); err != nil {
		return nil, fmt.Errorf("%s: typed_config is %s, want %s: %w", where, a.GetTypeUrl(), m.ProtoReflect().Descriptor().FullName(), err)
	}
	return m, nil
}

// errUnsupportedf reports configuration the simulator cannot follow.
func errUnsupportedf(format string, args ...any) error {
	return fmt.Errorf("not simulated: "+format, args...)
}
