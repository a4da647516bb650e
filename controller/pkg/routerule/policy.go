package routerule

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// mirror adds a RequestMirror filter's backend. A mirror that does not
// resolve is left out and reported: mirrored traffic is a copy, so the rule
// keeps serving.
func mirror(ev *backend.Resolver, r *ir.Route, fromNS, fromKind string, f *gatewayv1.HTTPRequestMirrorFilter) error {
	percent := 100.0
	switch {
	case f.Percent != nil && f.Fraction != nil:
		return errors.New("requestMirror may set percent or fraction, not both")
	case f.Percent != nil:
		percent = float64(*f.Percent)
	case f.Fraction != nil:
		den := int32(100)
		if f.Fraction.Denominator != nil {
			den = *f.Fraction.Denominator
		}
		if den <= 0 || f.Fraction.Numerator < 0 || f.Fraction.Numerator > den {
			return fmt.Errorf("requestMirror fraction %d/%d is not between 0 and 1", f.Fraction.Numerator, den)
		}
		percent = 100 * float64(f.Fraction.Numerator) / float64(den)
	}
	if percent < 0 || percent > 100 {
		return fmt.Errorf("requestMirror percent %g is not between 0 and 100", percent)
	}
	name, ok := ev.Resolve("mirror: ", fromNS, fromKind, f.BackendRef, backend.Upstream{})
	if !ok {
		return nil
	}
	r.Mirrors = append(r.Mirrors, ir.Mirror{Cluster: name, Percent: percent})
	return nil
}

// durationPattern is the Gateway API's Duration (GEP-2257): up to four
// groups of up to five digits and a unit of h, m, s or ms.
var durationPattern = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// ParseDuration parses a Gateway API duration; what names it in errors.
func ParseDuration(what string, d gatewayv1.Duration) (time.Duration, error) {
	if !durationPattern.MatchString(string(d)) {
		return 0, fmt.Errorf("%s %q is not a Gateway API duration such as 10s or 1m30s", what, d)
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", what, d, err)
	}
	return v, nil
}

// timeouts applies a rule's timeouts and retry policy. A request timeout of
// zero turns the route's timeout off, as the Gateway API defines.
func timeouts(r *ir.Route, to *gatewayv1.HTTPRouteTimeouts, retry *gatewayv1.HTTPRouteRetry) error {
	if to != nil {
		if to.Request != nil {
			d, err := ParseDuration("timeouts.request", *to.Request)
			if err != nil {
				return err
			}
			r.Timeout, r.TimeoutDisabled = d, d == 0
		}
		if to.BackendRequest != nil {
			d, err := ParseDuration("timeouts.backendRequest", *to.BackendRequest)
			if err != nil {
				return err
			}
			if r.Timeout > 0 && d > r.Timeout {
				return fmt.Errorf("timeouts.backendRequest %s is longer than timeouts.request %s", d, r.Timeout)
			}
			r.BackendTimeout = d
		}
	}
	if retry != nil {
		rt := &ir.Retry{Attempts: 1}
		if retry.Attempts != nil {
			if *retry.Attempts < 0 || *retry.Attempts > 100 {
				return fmt.Errorf("retry.attempts %d is not between 0 and 100", *retry.Attempts)
			}
			rt.Attempts = *retry.Attempts
		}
		for _, c := range retry.Codes {
			if c < 400 || c > 599 {
				return fmt.Errorf("retry code %d is not between 400 and 599", c)
			}
			rt.Codes = append(rt.Codes, uint32(c))
		}
		if retry.Backoff != nil {
			d, err := ParseDuration("retry.backoff", *retry.Backoff)
			if err != nil {
				return err
			}
			rt.Backoff = d
		}
		r.Retry = rt
	}
	return nil
}

// cors translates a CORS filter.
func cors(r *ir.Route, f *gatewayv1.HTTPCORSFilter) error {
	c := &ir.CORS{AllowCredentials: ptr.Deref(f.AllowCredentials, false), MaxAgeSeconds: f.MaxAge}
	if c.MaxAgeSeconds < 0 {
		return fmt.Errorf("cors maxAge %d is negative", f.MaxAge)
	}
	for _, o := range f.AllowOrigins {
		if err := validate.Value(string(o), "cors origin"); err != nil || strings.ContainsAny(string(o), " ,") {
			return fmt.Errorf("cors origin %q is not an origin", o)
		}
		c.AllowOrigins = append(c.AllowOrigins, string(o))
	}
	for _, m := range f.AllowMethods {
		if m != "*" && !methods[string(m)] {
			return fmt.Errorf("cors method %q is not an HTTP method or *", m)
		}
		c.AllowMethods = append(c.AllowMethods, string(m))
	}
	for _, list := range []struct {
		in  []gatewayv1.HTTPHeaderName
		out *[]string
	}{{f.AllowHeaders, &c.AllowHeaders}, {f.ExposeHeaders, &c.ExposeHeaders}} {
		for _, h := range list.in {
			if h != "*" {
				if err := validate.Token(string(h), "cors header"); err != nil {
					return err
				}
			}
			*list.out = append(*list.out, string(h))
		}
	}
	r.CORS = c
	return nil
}
