package gatewayapi

import (
	"fmt"
	"regexp"
	"strings"
)

// The API server checks Gateway API objects against the CRDs' schema, but the
// translator also reads objects that never went through it (translate's
// files), and Envoy refuses configuration that the schema would have let
// through. These checks follow the Gateway API v1 schema; what fails them is
// reported in status instead of reaching Envoy.

var (
	// hostnamePattern is the schema's Hostname: a DNS name, optionally with
	// a leading "*." label.
	hostnamePattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// tokenPattern is an HTTP header or query parameter name (RFC 7230 token).
	tokenPattern = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$")
	// pathPattern is a path of the characters RFC 3986 allows, %-escapes
	// included.
	pathPattern = regexp.MustCompile(`^/(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*$`)
)

var methods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true,
}

func checkHostname(h string, wildcardOK bool) error {
	if len(h) > 253 || !hostnamePattern.MatchString(h) {
		return fmt.Errorf("hostname %q is not a valid DNS name", h)
	}
	if !wildcardOK && isWildcard(h) {
		return fmt.Errorf("hostname %q may not be a wildcard here", h)
	}
	return nil
}

func checkToken(what, v string) error {
	if len(v) > 256 || !tokenPattern.MatchString(v) {
		return fmt.Errorf("%s %q is not a valid HTTP token", what, v)
	}
	return nil
}

// checkValue allows what Envoy allows in a header value: no NUL, CR or LF.
func checkValue(what, v string) error {
	if len(v) > 4096 || strings.ContainsAny(v, "\x00\r\n") {
		return fmt.Errorf("%s %q contains control characters or is longer than 4096", what, v)
	}
	return nil
}

// checkPath checks a path match value or replacement: absolute, of URL path
// characters, without "//" or dot segments that normalization would change.
func checkPath(what, p string) error {
	if len(p) > 1024 || !pathPattern.MatchString(p) {
		return fmt.Errorf("%s %q must be an absolute path of URL path characters", what, p)
	}
	for _, bad := range []string{"//", "/./", "/../", "%2f", "%2F"} {
		if strings.Contains(p, bad) {
			return fmt.Errorf("%s %q may not contain %q", what, p, bad)
		}
	}
	if strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/.") {
		return fmt.Errorf("%s %q may not end in a dot segment", what, p)
	}
	return nil
}

// checkRegex accepts what both Go and Envoy (RE2) compile; Go's syntax is
// RE2's.
func checkRegex(what, re string) error {
	if len(re) > 1024 || strings.ContainsAny(re, "\x00") {
		return fmt.Errorf("%s %q is longer than 1024 or contains NUL", what, re)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("%s %q: %v", what, re, err)
	}
	return nil
}
