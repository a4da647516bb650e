package v1alpha1

import (
	"strings"
	"testing"
)

// A profile read from a file is checked as the CRD's schema would.
func TestTracingSettingsValidate(t *testing.T) {
	ref := ObjectReference{Namespace: "o", Name: "otel"}
	for _, tc := range []struct {
		name string
		s    TracingSettings
		want string // "" for valid
	}{
		{name: "defaults", s: TracingSettings{ExtensionService: ref}},
		{name: "everything", s: TracingSettings{ExtensionService: ref, ServiceName: "shop", OverallSampling: "12.5", MaxPathTagLength: 64,
			CustomTags: []CustomTag{{TagName: "env", Literal: "prod"}, {TagName: "team", RequestHeaderName: "X-Team"}}}},
		{name: "no collector", s: TracingSettings{}, want: "needs a namespace and a name"},
		{name: "sampling above 100", s: TracingSettings{ExtensionService: ref, OverallSampling: "100.5"}, want: "not a percentage"},
		{name: "sampling not a number", s: TracingSettings{ExtensionService: ref, OverallSampling: "half"}, want: "not a percentage"},
		{name: "service name with a control character", s: TracingSettings{ExtensionService: ref, ServiceName: "a\nb"}, want: "serviceName"},
		{name: "tag with both values", s: TracingSettings{ExtensionService: ref, CustomTags: []CustomTag{{TagName: "t", Literal: "a", RequestHeaderName: "x"}}}, want: "exactly one"},
		{name: "tag without a name", s: TracingSettings{ExtensionService: ref, CustomTags: []CustomTag{{Literal: "a"}}}, want: "is not a name"},
		{name: "header that is no token", s: TracingSettings{ExtensionService: ref, CustomTags: []CustomTag{{TagName: "t", RequestHeaderName: "x y"}}}, want: "not a header name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
