package envoysim

import "testing"

// The cases of Envoy's own tests of normalize_path and merge_slashes
// (test/common/http/path_utility_test.cc), and the decoding of unreserved
// characters RFC 3986 section 6.2.2.2 asks for.
func TestCanonicalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/xyz", "/xyz"},
		{"/x/y/z", "/x/y/z"},
		{"/a/b/../c", "/a/c"},
		{"/a/b/./c", "/a/b/c"},
		{"a/b/../c", "/a/c"},
		{"/a/b/../../../../c", "/c"},
		{`/a/..\c`, "/c"},
		{"/%c0%af", "/%c0%af"},
		{"/%5c%25", "/%5c%25"},
		{"/a/b/%2E%2E/c", "/a/c"},
		{"/a/b/%2E./c", "/a/c"},
		{"/a/b/%2E/c", "/a/b/c"},
		{"..", "/"},
		{"/../a/b", "/a/b"},
		{"/./a/b", "/a/b"},
		{"/A/B/C", "/A/B/C"},
		{"/a/b/%2e%2e/c", "/a/c"},
		{"/a/%2F%2f/c", "/a/%2F%2f/c"},
		// Not Envoy's cases, but what it does with them.
		{"/a//b", "/a//b"},
		{"/%41%7e%2D", "/A~-"},
		{"/a/b/..", "/a/"},
		{"/a/b/.", "/a/b/"},
		{"/a/../b?x=/../y", "/b?x=/../y"},
		{"/a b", "/a%20b"},
	} {
		got, ok := canonicalPath(tc.in)
		if !ok || got != tc.want {
			t.Errorf("canonicalPath(%q) = %q, %t; want %q", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{"/xyz/.%00../abc", "/xyz/%00.%00./abc", "/xyz/AAAAA%%0000/abc"} {
		if got, ok := canonicalPath(in); ok {
			t.Errorf("canonicalPath(%q) = %q; want it refused", in, got)
		}
	}
}

func TestMergeSlashes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a//b/c", "a/b/c"},
		{"/a//b/c/", "/a/b/c/"},
		{"a//b/c/", "a/b/c/"},
		{"/a", "/a"},
		{"//a/b/c", "/a/b/c"},
		{"/a//b/c", "/a/b/c"},
		{"/a/b/c//", "/a/b/c/"},
		{"/a///b/c", "/a/b/c"},
		{"/a////b/c", "/a/b/c"},
		{"/a//b?a=///c", "/a/b?a=///c"},
		{"/a//b?", "/a/b?"},
		{"//a/?b", "/a/?b"},
	} {
		if got := mergeSlashes(tc.in); got != tc.want {
			t.Errorf("mergeSlashes(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// The cases of Envoy's own test of path_with_escaped_slashes_action's
// unescaping (PathUtilityTest.UnescapeSlashes).
func TestUnescapeSlashes(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		found    bool
	}{
		{"", "", false},
		{"%2f%2F", "//", true},
		{"/a%2Fb%2fc/", "/a/b/c/", true},
		{"%2b", "%2b", false},
		{"/a/b/c", "/a/b/c", false},
		{"%2", "%2", false},
		{"%", "%", false},
		{"/abc%2", "/abc%2", false},
		{"foo%", "foo%", false},
		{"/a%2F", "/a/", true},
		{"%2fa/", "/a/", true},
		{"%%2fa/", "%/a/", true},
		{"%2%2fa/", "%2/a/", true},
		{"%5c%5C", `\\`, true},
		{"/a%5Cb%5cc/", `/a\b\c/`, true},
		{"/a%5C", `/a\`, true},
		{"%5ca/", `\a/`, true},
		{"/x/%2E%2e/z%2f%2Fabc%5C../def", `/x/%2E%2e/z//abc\../def`, true},
		{"%2fa%5Cb%2fc%5c", `/a\b/c\`, true},
		{"%2fa%5Cb%2fc%5c?%2fabcd%5C%%2f%", `/a\b/c\?%2fabcd%5C%%2f%`, true},
	} {
		got, found := unescapeSlashes(tc.in)
		if got != tc.want || found != tc.found {
			t.Errorf("unescapeSlashes(%q) = %q, %t; want %q, %t", tc.in, got, found, tc.want, tc.found)
		}
	}
}
