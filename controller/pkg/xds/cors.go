package xds

import (
	"regexp"
	"strconv"
	"strings"

	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

const corsFilter = "envoy.filters.http.cors"

// corsPolicy is a route's CORS policy for Envoy's CORS filter. An origin
// with "*" matches any characters in its place. A preflight from an origin
// the route does not allow is answered by Envoy without
// Access-Control-Allow-Origin (the browser's refusal), not forwarded to
// the backend, unless the policy forwards it (an HTTPProxy's, as
// Contour leaves Envoy's default).
func corsPolicy(c *ir.CORS) *corsv3.CorsPolicy {
	p := &corsv3.CorsPolicy{
		AllowMethods:                 strings.Join(c.AllowMethods, ","),
		AllowHeaders:                 strings.Join(c.AllowHeaders, ","),
		ExposeHeaders:                strings.Join(c.ExposeHeaders, ","),
		ForwardNotMatchingPreflights: wrapperspb.Bool(c.ForwardPreflights),
	}
	if c.AllowCredentials {
		p.AllowCredentials = wrapperspb.Bool(true)
	}
	if c.AllowPrivateNetwork {
		p.AllowPrivateNetworkAccess = wrapperspb.Bool(true)
	}
	if c.MaxAgeSeconds > 0 || c.MaxAgeZero {
		p.MaxAge = strconv.Itoa(int(c.MaxAgeSeconds))
	}
	for _, re := range c.AllowOriginRegexes {
		p.AllowOriginStringMatch = append(p.AllowOriginStringMatch, &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}},
		})
	}
	for _, o := range c.AllowOrigins {
		if !strings.Contains(o, "*") {
			m := exact(o)
			m.IgnoreCase = c.OriginsIgnoreCase
			p.AllowOriginStringMatch = append(p.AllowOriginStringMatch, m)
			continue
		}
		parts := strings.Split(o, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		p.AllowOriginStringMatch = append(p.AllowOriginStringMatch, &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: strings.Join(parts, ".*")}},
		})
	}
	return p
}
