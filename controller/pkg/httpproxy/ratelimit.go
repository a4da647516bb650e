package httpproxy

import (
	"fmt"
	"net/http"
	"time"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/controller/pkg/envoyrules"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// refuseRateLimit refuses what a rate limit policy has beyond its local
// and global policies.
var refuseRateLimit = refuse[contourv1.RateLimitPolicy]("local", "global")

// localRateLimit reads a rateLimitPolicy's local policy as Contour does: a
// bucket of requests+burst tokens, filled with requests tokens every unit
// (second, minute, hour); a limited request gets responseStatusCode (429
// when unset) and responseHeadersToAdd, whose values may hold Contour's
// dynamic values (vars). typ and where are the sub-condition type and the
// place an error names.
func localRateLimit(p *contourv1.RateLimitPolicy, typ, where string, vars contourVars) (*ir.LocalRateLimit, *problem) {
	if p == nil {
		return nil, nil
	}
	if f := refuseRateLimit(p); f != "" {
		return nil, refused(typ, "NotSupported", fmt.Sprintf("%s.rateLimitPolicy.%s is not supported yet", where, f))
	}
	l := p.Local
	if l == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) (*ir.LocalRateLimit, *problem) {
		return nil, refused(typ, "RateLimitPolicyNotValid", fmt.Sprintf("%s.rateLimitPolicy is invalid: ", where)+fmt.Sprintf(format, args...))
	}
	if l.Requests == 0 {
		return bad("invalid requests value %d in local rate limit policy", l.Requests)
	}
	units := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour}
	interval, ok := units[l.Unit]
	if !ok {
		return bad("invalid unit %q in local rate limit policy", l.Unit)
	}
	if c := l.ResponseStatusCode; c != 0 {
		// Envoy takes the codes its StatusCode enum names, no other.
		if _, known := typev3.StatusCode_name[int32(c)]; c < 400 || c > 599 || !known {
			return bad("invalid response status code %d: Envoy answers with a 4xx or 5xx code it knows", c)
		}
	}
	out := &ir.LocalRateLimit{Max: l.Requests + l.Burst, PerFill: l.Requests, FillInterval: interval, Status: l.ResponseStatusCode}
	seen := map[string]bool{}
	for _, h := range l.ResponseHeadersToAdd {
		key := http.CanonicalHeaderKey(h.Name)
		if seen[key] {
			return bad("duplicate header addition: %q", key)
		}
		seen[key] = true
		if err := validate.Token(h.Name, "header name"); err != nil {
			return bad("%v", err)
		}
		if err := validate.Value(h.Value, "header", h.Name, "value"); err != nil {
			return bad("%v", err)
		}
		if !envoyrules.Modifiable(h.Name) {
			return bad("header %q cannot be set", h.Name)
		}
		out.ResponseHeaders = append(out.ResponseHeaders, dynamicHeader(h.Name, h.Value, vars))
	}
	return out, nil
}
