package hostname

import (
	"regexp"
	"testing"
)

func TestIntersect(t *testing.T) {
	for _, tc := range []struct {
		route, listener, want string
		ok                    bool
	}{
		{"", "", "", true},
		{"foo.example.com", "", "foo.example.com", true},
		{"", "*.example.com", "*.example.com", true},
		{"foo.example.com", "foo.example.com", "foo.example.com", true},
		{"foo.example.com", "bar.example.com", "", false},
		{"foo.example.com", "*.example.com", "foo.example.com", true},
		{"a.b.example.com", "*.example.com", "a.b.example.com", true},
		{"example.com", "*.example.com", "", false},
		{"*.example.com", "foo.example.com", "foo.example.com", true},
		{"*.example.com", "example.com", "", false},
		{"*.example.com", "*.example.com", "*.example.com", true},
		{"*.foo.example.com", "*.example.com", "*.foo.example.com", true},
		{"*.example.com", "*.foo.example.com", "*.foo.example.com", true},
		{"*.example.com", "*.example.org", "", false},
		{"*.xample.com", "*.example.com", "", false},
		{"fooexample.com", "*.example.com", "", false},
	} {
		got, ok := Intersect(tc.route, tc.listener)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Intersect(%q, %q) = %q, %v; want %q, %v", tc.route, tc.listener, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMoreSpecific(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"foo.example.com", "*.example.com", true},
		{"*.example.com", "foo.example.com", false},
		{"*.foo.example.com", "*.example.com", true},
		{"*.example.com", "", true},
		{"", "*.example.com", false},
		{"a.com", "a.com", false},
	} {
		if got := MoreSpecific(tc.a, tc.b); got != tc.want {
			t.Errorf("MoreSpecific(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestOneLabelAuthority(t *testing.T) {
	// Envoy's safe_regex matches the whole value.
	re := regexp.MustCompile("^(?:" + OneLabelAuthority("*.example.com") + ")$")
	for host, want := range map[string]bool{
		"a.example.com": true, "a-1.example.com": true, "a.example.com:8080": true,
		"a.b.example.com": false, "example.com": false, "-a.example.com": false, "a.exampleXcom": false, "a.example.com.evil": false,
	} {
		if got := re.MatchString(host); got != want {
			t.Errorf("%s matches %t, want %t", host, got, want)
		}
	}
}
