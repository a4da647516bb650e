package validate

import (
	"regexp"
	"testing"
)

// The byte-loop checks must accept exactly what the schema's patterns do.
func TestChecksMatchSchemaPatterns(t *testing.T) {
	hostname := regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	token := regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$")
	path := regexp.MustCompile(`^/(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*$`)
	inputs := []string{
		"", "a", "a.b", "*.a.b", "*.", "*", "a..b", "-a", "a-", "a-b.c", "A.b", "a_b", "*.*.a",
		"foo.example.com", "x" + string(rune(0xe9)), "/", "/a/b", "/%2F", "/%zz", "/%2", "a/b", "/a b",
		"/a?b", "/a#b", "/~!$&'()*+,;=:@", "X-Header", "bad header", "x:y", "hello\n",
	}
	for _, in := range inputs {
		if got, want := validHostname(in), hostname.MatchString(in); got != want {
			t.Errorf("validHostname(%q) = %v, pattern says %v", in, got, want)
		}
		if got, want := validToken(in), token.MatchString(in); got != want {
			t.Errorf("validToken(%q) = %v, pattern says %v", in, got, want)
		}
		if got, want := validPath(in), path.MatchString(in); got != want {
			t.Errorf("validPath(%q) = %v, pattern says %v", in, got, want)
		}
	}
}

func FuzzChecksMatchSchemaPatterns(f *testing.F) {
	for _, s := range []string{"foo.example.com", "*.a", "/a/%20", "X-Y"} {
		f.Add(s)
	}
	hostname := regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	token := regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$")
	path := regexp.MustCompile(`^/(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*$`)
	f.Fuzz(func(t *testing.T, in string) {
		if validHostname(in) != hostname.MatchString(in) || validToken(in) != token.MatchString(in) || validPath(in) != path.MatchString(in) {
			t.Errorf("checks disagree with the schema patterns on %q", in)
		}
	})
}
