package accesslog

import (
	"testing"

	"isobar.dev/api/v1alpha1"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		format string
		ok     bool
	}{
		{"", true},
		{"plain text\n", true},
		{"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %RESPONSE_CODE%\n", true},
		{"%START_TIME(%Y/%m/%dT%H:%M:%S%z %s)% done", true},
		{"%REQ(USER-AGENT):10%", true},
		{"%DYNAMIC_METADATA(udp.proxy:bytes_sent)%", true},
		{"100% done", false},
		{"%RESPONSE_CODE", false},
		{"%response_code%", false},
		{"%REQ(:PATH%", false},
		{"%REQ(:PATH):x%", false},
		{"%A_%", false},
	} {
		if err := Check(tc.format); (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tc.format, err, tc.ok)
		}
	}
	for _, f := range DefaultJSONFields {
		if err := CheckField(f); err != nil {
			t.Errorf("default field %s: %v", f, err)
		}
	}
	for _, f := range []string{"=x", "k=", "k", "k=%X"} {
		if CheckField(f) == nil {
			t.Errorf("CheckField(%q) = nil, want an error", f)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		s  v1alpha1.AccessLogSettings
		ok bool
	}{
		{v1alpha1.AccessLogSettings{Format: "Text"}, true},
		{v1alpha1.AccessLogSettings{Format: "Text", TextFormat: "%RESPONSE_CODE\n"}, false},
		{v1alpha1.AccessLogSettings{Format: "JSON", JSONFields: []string{"a=%DURATION%", "b=%PROTOCOL%"}}, true},
		{v1alpha1.AccessLogSettings{Format: "JSON", JSONFields: []string{"a=%DURATION%", "a=%PROTOCOL%"}}, false},
		{v1alpha1.AccessLogSettings{Format: "JSON", JSONFields: []string{"a=%DURATION"}}, false},
	} {
		if err := Validate(tc.s); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.s, err, tc.ok)
		}
	}
}
