package xds

import (
	"strings"
	"testing"

	"isobar.dev/api/v1alpha1"
)

func TestFromRuntime(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   v1alpha1.RuntimeSettings
		want func(Settings) bool
		err  string
	}{
		{"defaults", v1alpha1.RuntimeSettings{}, func(s Settings) bool {
			return s.AccessLog == "Text" && s.ServerHeader == "Overwrite" && s.AccessLogText == ""
		}, ""},
		{"server header", v1alpha1.RuntimeSettings{HTTP: v1alpha1.HTTPSettings{ServerHeader: "PassThrough"}}, func(s Settings) bool {
			return s.ServerHeader == "PassThrough"
		}, ""},
		{"json", v1alpha1.RuntimeSettings{AccessLog: v1alpha1.AccessLogSettings{Format: "JSON", JSONFields: []string{"a=%DURATION%"}}}, func(s Settings) bool {
			return s.AccessLog == "JSON" && len(s.AccessLogJSON) == 1
		}, ""},
		{"bad text", v1alpha1.RuntimeSettings{AccessLog: v1alpha1.AccessLogSettings{Format: "Text", TextFormat: "50% of %DURATION%"}}, nil, "textFormat"},
		{"duplicate key", v1alpha1.RuntimeSettings{AccessLog: v1alpha1.AccessLogSettings{Format: "JSON", JSONFields: []string{"a=%DURATION%", "a=%PROTOCOL%"}}}, nil, "jsonFields[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromRuntime(tc.rs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || !tc.want(s) {
				t.Fatalf("FromRuntime = %+v, %v", s, err)
			}
		})
	}
}
