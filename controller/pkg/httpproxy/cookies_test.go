package httpproxy

import (
	"reflect"
	"strings"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	kptr "k8s.io/utils/ptr"

	"isobar.dev/controller/pkg/ir"
)

func TestCookieRewrites(t *testing.T) {
	path := func(v string) *contourv1.CookiePathRewrite { return &contourv1.CookiePathRewrite{Value: v} }
	for _, tc := range []struct {
		name string
		in   []contourv1.CookieRewritePolicy
		want string // the problem's message, "" for none
	}{
		{name: "every attribute", in: []contourv1.CookieRewritePolicy{{Name: "s", PathRewrite: path("/"), DomainRewrite: &contourv1.CookieDomainRewrite{Value: "example.com"},
			Secure: kptr.To(true), SameSite: kptr.To("Lax")}}},
		{name: "nothing rewritten", in: []contourv1.CookieRewritePolicy{{Name: "s"}}, want: `no attributes rewritten for cookie "s" on route`},
		{name: "twice", in: []contourv1.CookieRewritePolicy{{Name: "s", Secure: kptr.To(true)}, {Name: "s", Secure: kptr.To(false)}}, want: "duplicate cookie rewrite rule"},
		{name: "name no token", in: []contourv1.CookieRewritePolicy{{Name: "a b", Secure: kptr.To(true)}}, want: "is not a token"},
		{name: "path with a semicolon", in: []contourv1.CookieRewritePolicy{{Name: "s", PathRewrite: path("/a;Secure")}}, want: "is not an attribute value"},
		{name: "path with a newline", in: []contourv1.CookieRewritePolicy{{Name: "s", PathRewrite: path("/a\n")}}, want: "is not an attribute value"},
		{name: "sameSite unknown", in: []contourv1.CookieRewritePolicy{{Name: "s", SameSite: kptr.To("Sometimes")}}, want: "is not Strict, Lax or None"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bad := cookieRewrites(tc.in, "route")
			switch {
			case tc.want == "" && bad != nil:
				t.Errorf("refused: %s", bad.Message)
			case tc.want != "" && (bad == nil || !strings.Contains(bad.Message, tc.want)):
				t.Errorf("problem %+v, want one saying %q", bad, tc.want)
			}
		})
	}
}

// A service's policy for a cookie merges into its route's attribute by
// attribute, as Contour's cookieRewriteConfig does; the route's policies
// for other cookies stay.
func TestMergeCookieRewrites(t *testing.T) {
	yes, no := true, false
	route := []ir.CookieRewrite{{Name: "a", Path: "/", Secure: &yes, SameSite: "Lax"}, {Name: "b", Path: "/b"}}
	service := []ir.CookieRewrite{{Name: "a", Domain: "example.com", Secure: &no}, {Name: "c", Path: "/c"}}
	got := mergeCookieRewrites(route, service)
	want := []ir.CookieRewrite{{Name: "a", Path: "/", Domain: "example.com", Secure: &no, SameSite: "Lax"}, {Name: "b", Path: "/b"}, {Name: "c", Path: "/c"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	if *route[0].Secure != true || route[0].Domain != "" {
		t.Errorf("the route's policies changed: %+v", route[0])
	}
}
