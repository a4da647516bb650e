// Package validate checks the strings of routing objects (hostnames, HTTP
// tokens, header values, paths, regular expressions) as the Gateway API's
// CRD schema and Envoy need them.
//
// The API server checks objects against the CRDs' schema, but the
// translator also reads objects that never went through it (translate's
// files), and Envoy refuses configuration that the schema would have let
// through. These checks follow the Gateway API v1 schema; what fails them
// is reported in status instead of reaching Envoy.
//
// The checks are byte loops rather than regular expressions: they run for
// every route on every translation.
package validate

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenChars are the characters of an HTTP token (RFC 7230), the name of a
// header or query parameter.
var tokenChars = charSet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~")

// pathChars are the characters RFC 3986 allows in a path besides
// %-escapes.
var pathChars = charSet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-/._~!$&'()*+,;=:@")

func charSet(s string) (set [256]bool) {
	for i := 0; i < len(s); i++ {
		set[s[i]] = true
	}
	return set
}

// validHostname is the schema's Hostname: DNS labels of lowercase letters,
// digits and inner hyphens, optionally after a leading "*." label.
func validHostname(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChars[s[i]] {
			return false
		}
	}
	return true
}

func validPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' {
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
			i += 2
			continue
		}
		if !pathChars[c] {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// Hostname checks a hostname; a wildcard ("*.example.com") only where
// wildcardOK.
func Hostname(h string, wildcardOK bool) error {
	if len(h) > 253 || !validHostname(h) {
		return fmt.Errorf("hostname %q is not a valid DNS name", h)
	}
	if !wildcardOK && strings.HasPrefix(h, "*.") {
		return fmt.Errorf("hostname %q may not be a wildcard here", h)
	}
	return nil
}

// Token and Value name what they check in words joined only on
// failure: they run for every header of every route.
func Token(v string, what ...string) error {
	if len(v) > 256 || !validToken(v) {
		return fmt.Errorf("%s %q is not a valid HTTP token", strings.Join(what, " "), v)
	}
	return nil
}

// Value allows what Envoy allows in a header value: no NUL, CR or LF.
func Value(v string, what ...string) error {
	if len(v) > 4096 || strings.ContainsAny(v, "\x00\r\n") {
		return fmt.Errorf("%s %q contains control characters or is longer than 4096", strings.Join(what, " "), v)
	}
	return nil
}

// Text allows what a string field of Envoy's configuration carries as
// text, such as a rate limit descriptor's key or an authorization
// context's value: UTF-8 without control characters, at most 4096 bytes.
func Text(v string, what ...string) error {
	if len(v) > 4096 || !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
		return fmt.Errorf("%s %q is not text: UTF-8 without control characters, at most 4096 bytes", strings.Join(what, " "), v)
	}
	return nil
}

// Path checks a path match value or replacement: absolute, of URL path
// characters, without "//" or dot segments that normalization would change.
func Path(what, p string) error {
	if len(p) > 1024 || !validPath(p) {
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

// Regex accepts what both Go and Envoy (RE2) compile; Go's syntax is
// RE2's.
func Regex(what, re string) error {
	if len(re) > 1024 || strings.ContainsAny(re, "\x00") {
		return fmt.Errorf("%s %q is longer than 1024 or contains NUL", what, re)
	}
	if _, err := regexp.Compile(re); err != nil {
		// The parser's error quotes the expression raw, control
		// characters and all, which a status message (and its YAML)
		// cannot carry: the expression is quoted above instead.
		var se *syntax.Error
		if errors.As(err, &se) {
			return fmt.Errorf("%s %q: %s", what, re, se.Code)
		}
		return fmt.Errorf("%s %q: %w", what, re, err)
	}
	return nil
}
