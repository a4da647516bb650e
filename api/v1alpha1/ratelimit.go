package v1alpha1

import "fmt"

// Validate refuses a rate limit service the CRD's schema lets through in
// part (its twin rules) or not at all, as when a profile is read from a
// file: an ExtensionService without a name, a domain that is not text
// Envoy can carry.
func (s *RateLimitServiceSettings) Validate() error {
	if s.ExtensionService.Namespace == "" || s.ExtensionService.Name == "" {
		return fmt.Errorf("runtimeSettings.httpproxy.rateLimitService.extensionService needs a namespace and a name")
	}
	if !isText(s.Domain, 253) {
		return fmt.Errorf("runtimeSettings.httpproxy.rateLimitService.domain %q is not a domain Envoy can carry: text of at most 253 bytes without control characters", s.Domain)
	}
	return nil
}
