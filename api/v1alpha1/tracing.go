package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Validate refuses tracing settings the CRD's schema lets through in part
// or not at all, as when a profile is read from a file.
func (s *TracingSettings) Validate() error {
	if s.ExtensionService.Namespace == "" || s.ExtensionService.Name == "" {
		return fmt.Errorf("runtimeSettings.tracing.extensionService needs a namespace and a name")
	}
	if !isText(s.ServiceName, 253) {
		return fmt.Errorf("runtimeSettings.tracing.serviceName %q is not text of at most 253 bytes without control characters", s.ServiceName)
	}
	if _, err := s.Sampling(); err != nil {
		return err
	}
	if _, _, err := s.ClientAndRandomSampling(); err != nil {
		return err
	}
	for i, t := range s.CustomTags {
		switch {
		case t.TagName == "" || !isText(t.TagName, 253):
			return fmt.Errorf("runtimeSettings.tracing.customTags[%d].tagName %q is not a name", i, t.TagName)
		case (t.Literal == "") == (t.RequestHeaderName == ""):
			return fmt.Errorf("runtimeSettings.tracing.customTags[%d] needs exactly one of literal and requestHeaderName", i)
		case !isText(t.Literal, 4096):
			return fmt.Errorf("runtimeSettings.tracing.customTags[%d].literal is not text without control characters", i)
		case t.RequestHeaderName != "" && !isToken(t.RequestHeaderName):
			return fmt.Errorf("runtimeSettings.tracing.customTags[%d].requestHeaderName %q is not a header name", i, t.RequestHeaderName)
		}
	}
	return nil
}

// Sampling is the percentage of requests traced: OverallSampling, 100
// when unset.
func (s *TracingSettings) Sampling() (float64, error) {
	return percentage("overallSampling", s.OverallSampling)
}

// ClientAndRandomSampling are the percentages of requests with and
// without an x-client-trace-id that are traced before Sampling: 100 each
// when unset.
func (s *TracingSettings) ClientAndRandomSampling() (client, random float64, err error) {
	if client, err = percentage("clientSampling", s.ClientSampling); err != nil {
		return 0, 0, err
	}
	random, err = percentage("randomSampling", s.RandomSampling)
	return client, random, err
}

// percentage reads a sampling field: a decimal from 0 to 100, 100 when
// empty.
func percentage(field, v string) (float64, error) {
	if v == "" {
		return 100, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 100 {
		return 0, fmt.Errorf("runtimeSettings.tracing.%s %q is not a percentage from 0 to 100", field, v)
	}
	return f, nil
}

// isText reports whether v is text Envoy can carry: UTF-8 without
// control characters, of at most max bytes.
func isText(v string, max int) bool {
	return len(v) <= max && utf8.ValidString(v) && !strings.ContainsFunc(v, unicode.IsControl)
}

// isToken reports whether v is an HTTP token (RFC 9110), as header names
// are.
func isToken(v string) bool {
	if v == "" {
		return false
	}
	for _, c := range []byte(v) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
