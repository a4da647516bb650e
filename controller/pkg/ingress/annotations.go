package ingress

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/timeout"
)

// Annotations Isobar reads on an Ingress, with Contour's meaning.
const (
	// ForceSSLRedirect "true" redirects HTTP requests for the Ingress's
	// TLS hosts to HTTPS.
	ForceSSLRedirect = "ingress.kubernetes.io/force-ssl-redirect"
	// AllowHTTP "false" serves the Ingress over HTTPS only: its rules get
	// no routes on ingress-http (unless ForceSSLRedirect redirects there).
	AllowHTTP = "kubernetes.io/ingress.allow-http"
	// ResponseTimeout bounds each request of the Ingress's routes, retries
	// included (a duration, or "infinity" for none); RequestTimeout is
	// Contour's older name for it, read when ResponseTimeout is absent.
	ResponseTimeout = "projectcontour.io/response-timeout"
	RequestTimeout  = "projectcontour.io/request-timeout"
	// RetryOn lists, comma-separated, the failures Envoy retries;
	// NumRetries is how many times (-1 for none; 0 or unset, Envoy's
	// default of one), and PerTryTimeout bounds each try. Without
	// RetryOn the other two do nothing, as in Contour.
	RetryOn       = "projectcontour.io/retry-on"
	NumRetries    = "projectcontour.io/num-retries"
	PerTryTimeout = "projectcontour.io/per-try-timeout"
	// WebsocketRoutes lists, comma-separated, the paths of the Ingress's
	// rules that allow websocket upgrades; the others refuse them.
	WebsocketRoutes = "projectcontour.io/websocket-routes"
	// TLSMinimumProtocolVersion and TLSMaximumProtocolVersion bound the
	// TLS versions ("1.2", "1.3") of the Ingress's TLS hosts.
	TLSMinimumProtocolVersion = "projectcontour.io/tls-minimum-protocol-version"
	TLSMaximumProtocolVersion = "projectcontour.io/tls-maximum-protocol-version"
	// TLSCertNamespace is the namespace of the Secrets spec.tls names
	// without one ("namespace/name" names one); the Secret's namespace
	// must delegate it (a TLSCertificateDelegation or a ReferenceGrant).
	TLSCertNamespace = refgrant.IngressCertNamespace
)

// retryOn are the failures RetryOn may name: those of an HTTPProxy's
// retryPolicy.retryOn.
var retryOn = []string{"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "envoy-ratelimited",
	"retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers", "http3-post-connect-failure",
	"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

// policy is what an Ingress's annotations ask of its routes.
type policy struct {
	httpAllowed bool
	redirect    bool
	timeout     time.Duration // negative: none
	retry       *ir.Retry
	perTry      time.Duration
	websockets  map[string]bool
	problems    []string
}

// policyOf reads the route annotations of an Ingress as Contour does; a
// value Contour would not use is reported and leaves Envoy's default.
func policyOf(ing *networkingv1.Ingress) policy {
	a := ing.Annotations
	p := policy{httpAllowed: a[AllowHTTP] != "false", redirect: a[ForceSSLRedirect] == "true", websockets: map[string]bool{}}
	key, value := ResponseTimeout, a[ResponseTimeout]
	if value == "" {
		key, value = RequestTimeout, a[RequestTimeout]
	}
	if d, err := timeout.Parse(value); err != nil {
		p.problem(key, "%v; Envoy's default applies", err)
	} else {
		p.timeout = d
	}
	if on := a[RetryOn]; on != "" {
		p.retry = &ir.Retry{Attempts: numRetries(a[NumRetries])}
		for c := range strings.SplitSeq(on, ",") {
			switch c = strings.TrimSpace(c); {
			case c == "":
			case slices.Contains(retryOn, c):
				p.retry.On = append(p.retry.On, c)
			default:
				p.problem(RetryOn, "%q is not a retry condition (one of %s); it is left out", c, strings.Join(retryOn, ", "))
			}
		}
		if len(p.retry.On) == 0 {
			p.retry = nil
		}
		switch d, err := timeout.Parse(a[PerTryTimeout]); {
		case err != nil:
			p.problem(PerTryTimeout, "%v; tries are bounded by the request's timeout only", err)
		case d > 0:
			p.perTry = d
		}
	}
	for r := range strings.SplitSeq(a[WebsocketRoutes], ",") {
		if r = strings.TrimSpace(r); r != "" {
			p.websockets[r] = true
		}
	}
	return p
}

// numRetries is Contour's reading of num-retries: -1 is no retry, 0, 1,
// another negative number or no number are Envoy's default of one.
func numRetries(s string) int {
	n, err := strconv.ParseInt(s, 10, 32)
	switch {
	case err != nil || n == 0:
		return 1
	case n == -1:
		return 0
	case n < 0:
		return 1
	}
	return int(n)
}

func (p *policy) problem(annotation, format string, args ...any) {
	p.problems = append(p.problems, annotation+": "+fmt.Sprintf(format, args...))
}

// apply gives a route of the Ingress's rule path the policy.
func (p *policy) apply(r *ir.Route, path string) {
	switch {
	case p.timeout < 0:
		r.TimeoutDisabled = true
	case p.timeout > 0:
		r.Timeout = p.timeout
	}
	if p.retry != nil {
		rt := *p.retry
		r.Retry, r.BackendTimeout = &rt, p.perTry
	}
	r.WebsocketsDisabled = !p.websockets[path]
}

// TLSVersions are the TLS versions an Ingress's annotations ask of its
// TLS hosts ("" for the fleet's), and what is wrong with them. ok is false
// when the minimum is above the maximum: Contour then serves none of the
// Ingress's TLS hosts.
func TLSVersions(ing *networkingv1.Ingress) (minimum, maximum string, problems []string, ok bool) {
	read := func(key string) string {
		switch v := ing.Annotations[key]; v {
		case "", "1.2", "1.3":
			return v
		default:
			problems = append(problems, fmt.Sprintf("%s: %q is not a TLS version Isobar serves (1.2 or 1.3); the default applies", key, v))
			return ""
		}
	}
	minimum, maximum = read(TLSMinimumProtocolVersion), read(TLSMaximumProtocolVersion)
	if minimum == "1.3" && maximum == "1.2" {
		problems = append(problems, fmt.Sprintf("%s 1.3 is above %s 1.2: the Ingress's TLS hosts are not served", TLSMinimumProtocolVersion, TLSMaximumProtocolVersion))
		return "", "", problems, false
	}
	return minimum, maximum, problems, true
}

// ChainTLS is what an Ingress's TLS hosts ask of their filter chains
// beyond their certificates: nil for the fleet's TLS versions.
func ChainTLS(ing *networkingv1.Ingress) *ir.ChainTLS {
	minimum, maximum, _, ok := TLSVersions(ing)
	if !ok || minimum == "" && maximum == "" {
		return nil
	}
	return &ir.ChainTLS{MinTLS: minimum, MaxTLS: maximum}
}
