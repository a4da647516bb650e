package httpproxy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/controller/pkg/ir"
)

// cookieRewrites reads cookieRewritePolicies as Contour does: each names a
// cookie once and rewrites at least one of its attributes; the values
// must be what a Set-Cookie attribute can hold. what says where the
// policies are ("route", "service") for the message.
func cookieRewrites(ps []contourv1.CookieRewritePolicy, what string) ([]ir.CookieRewrite, *problem) {
	bad := func(format string, args ...any) ([]ir.CookieRewrite, *problem) {
		return nil, refused(contourv1.ConditionTypeRouteError, "CookieRewritePoliciesInvalid",
			fmt.Sprintf(format, args...)+" on "+what+" cookie rewrite rules")
	}
	var out []ir.CookieRewrite
	for _, p := range ps {
		switch {
		case !isCookieToken(p.Name):
			return bad("cookie name %q is not a token", p.Name)
		case p.PathRewrite == nil && p.DomainRewrite == nil && p.Secure == nil && p.SameSite == nil:
			return bad("no attributes rewritten for cookie %q", p.Name)
		case slices.ContainsFunc(out, func(c ir.CookieRewrite) bool { return c.Name == p.Name }):
			return bad("duplicate cookie rewrite rule for cookie %q", p.Name)
		}
		c := ir.CookieRewrite{Name: p.Name, Secure: p.Secure}
		if r := p.PathRewrite; r != nil {
			if !isAttributeValue(r.Value) {
				return bad("path %q of cookie %q is not an attribute value", r.Value, p.Name)
			}
			c.Path = r.Value
		}
		if r := p.DomainRewrite; r != nil {
			if !isAttributeValue(r.Value) {
				return bad("domain %q of cookie %q is not an attribute value", r.Value, p.Name)
			}
			c.Domain = r.Value
		}
		if s := p.SameSite; s != nil {
			if *s != "Strict" && *s != "Lax" && *s != "None" {
				return bad("sameSite %q of cookie %q is not Strict, Lax or None", *s, p.Name)
			}
			c.SameSite = *s
		}
		out = append(out, c)
	}
	return out, nil
}

// mergeCookieRewrites are a service's cookie rewrites and its route's,
// merged as Contour merges them: for one cookie, each attribute the
// service's policy sets replaces the route's, and the route's others stay.
func mergeCookieRewrites(route, service []ir.CookieRewrite) []ir.CookieRewrite {
	if len(service) == 0 {
		return route
	}
	out := slices.Clone(route)
	for _, c := range service {
		i := slices.IndexFunc(out, func(r ir.CookieRewrite) bool { return r.Name == c.Name })
		if i < 0 {
			out = append(out, c)
			continue
		}
		m := &out[i]
		m.Path, m.Domain, m.SameSite = cmp.Or(c.Path, m.Path), cmp.Or(c.Domain, m.Domain), cmp.Or(c.SameSite, m.SameSite)
		if c.Secure != nil {
			m.Secure = c.Secure
		}
	}
	return out
}

// isCookieToken reports whether a cookie name is an RFC 6265 token.
func isCookieToken(s string) bool {
	return s != "" && len(s) <= 4096 && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r)
	})
}

// isAttributeValue reports whether v can be a Set-Cookie attribute's
// value: text without ";" or control characters.
func isAttributeValue(v string) bool {
	return v != "" && len(v) <= 4096 && !strings.ContainsFunc(v, func(r rune) bool { return r == ';' || unicode.IsControl(r) || r >= 0x7f })
}
