// Package accesslog holds what the operator, the controller and the CRD
// agree on about Envoy access log formats: the syntax of a command operator
// and the fields of the default JSON line.
//
// Envoy refuses a listener whose access log format it cannot parse, and a
// refused listener keeps serving its previous configuration (or none) while
// the profile looks fine. Checking the syntax before the format reaches
// Envoy turns that into a message naming the field.
package accesslog

import (
	"fmt"
	"regexp"
	"strings"

	"isobar.dev/api/v1alpha1"
)

// operator is Envoy's command operator syntax (substitution format parser):
// %NAME%, %NAME(ARGS)% or %NAME(ARGS):MAXLEN%.
var operator = regexp.MustCompile(`^%([A-Z]|[A-Z][A-Z0-9_]*[A-Z0-9])(\([^)]*\))?(:[0-9]+)?%`)

// Check reports the first '%' of format that does not start a command
// operator Envoy can parse. It does not know every operator name: Envoy
// adds them between releases, and an unknown name is Envoy's to refuse.
func Check(format string) error {
	for i := 0; i < len(format); {
		j := strings.IndexByte(format[i:], '%')
		if j < 0 {
			return nil
		}
		i += j
		m := operator.FindString(format[i:])
		if m == "" {
			return fmt.Errorf("position %d: %q does not start a command operator such as %%REQ(:PATH)%% or %%RESPONSE_CODE%%", i, abbreviate(format[i:]))
		}
		i += len(m)
	}
	return nil
}

// CheckField checks a JSON field, "key=operators".
func CheckField(field string) error {
	key, value, ok := strings.Cut(field, "=")
	if !ok || key == "" || value == "" {
		return fmt.Errorf("%q is not key=value", field)
	}
	if err := Check(value); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func abbreviate(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

// DefaultJSONFields are the JSON line's fields when a profile names none:
// the fields of Envoy's default text line, keyed.
var DefaultJSONFields = []string{
	"start_time=%START_TIME%",
	"method=%REQ(:METHOD)%",
	"path=%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
	"protocol=%PROTOCOL%",
	"response_code=%RESPONSE_CODE%",
	"response_flags=%RESPONSE_FLAGS%",
	"bytes_received=%BYTES_RECEIVED%",
	"bytes_sent=%BYTES_SENT%",
	"duration=%DURATION%",
	"upstream_service_time=%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
	"x_forwarded_for=%REQ(X-FORWARDED-FOR)%",
	"user_agent=%REQ(USER-AGENT)%",
	"request_id=%REQ(X-REQUEST-ID)%",
	"authority=%REQ(:AUTHORITY)%",
	"upstream_host=%UPSTREAM_HOST%",
	"upstream_cluster=%UPSTREAM_CLUSTER%",
	"route_name=%ROUTE_NAME%",
}

// Validate checks a profile's access log settings as Envoy will: the text
// format's operators, each JSON field's, and that no JSON key repeats (the
// JSON line would keep only one of them).
func Validate(s v1alpha1.AccessLogSettings) error {
	if s.TextFormat != "" && s.Format != "Text" && s.Format != "" {
		return fmt.Errorf("runtimeSettings.accessLog.textFormat applies only to format Text")
	}
	if len(s.JSONFields) > 0 && s.Format != "JSON" {
		return fmt.Errorf("runtimeSettings.accessLog.jsonFields apply only to format JSON")
	}
	if err := Check(s.TextFormat); err != nil {
		return fmt.Errorf("runtimeSettings.accessLog.textFormat: %w", err)
	}
	keys := map[string]int{}
	for i, f := range s.JSONFields {
		if err := CheckField(f); err != nil {
			return fmt.Errorf("runtimeSettings.accessLog.jsonFields[%d]: %w", i, err)
		}
		key, _, _ := strings.Cut(f, "=")
		if j, dup := keys[key]; dup {
			return fmt.Errorf("runtimeSettings.accessLog.jsonFields[%d]: key %q is also jsonFields[%d]'s", i, key, j)
		}
		keys[key] = i
	}
	return nil
}
