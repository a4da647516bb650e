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
