package httpproxy

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// headers translates a headers policy: set replaces a header, remove
// removes it. A request policy of a route may set Host, which rewrites
// the host; values are literal (Contour's dynamic values, "%...%", are not
// served yet).
func headers(p *contourv1.HeadersPolicy, what string, hostOK bool) (*ir.HeaderModifier, string, *problem) {
	if p == nil {
		return nil, "", nil
	}
	bad := func(reason, format string, args ...any) (*ir.HeaderModifier, string, *problem) {
		return nil, "", refused(contourv1.ConditionTypeRouteError, reason, what+": "+fmt.Sprintf(format, args...))
	}
	out := &ir.HeaderModifier{}
	host := ""
	seen := map[string]bool{}
	for _, h := range p.Set {
		name := http.CanonicalHeaderKey(h.Name)
		if seen[name] {
			return bad("HeadersPolicyInvalid", "duplicate header addition: %q", name)
		}
		seen[name] = true
		if err := validate.Token(h.Name, "header name"); err != nil {
			return bad("HeadersPolicyInvalid", "%v", err)
		}
		if err := validate.Value(h.Value, "header", h.Name, "value"); err != nil {
			return bad("HeadersPolicyInvalid", "%v", err)
		}
		if strings.Contains(h.Value, "%") {
			return bad("NotSupported", "header %q: dynamic header values are not supported yet", h.Name)
		}
		if name == "Host" {
			if !hostOK {
				return bad("HeadersPolicyInvalid", "rewriting %q header is not supported", name)
			}
			host = h.Value
			continue
		}
		out.Set = append(out.Set, ir.Header{Name: h.Name, Value: h.Value})
	}
	seen = map[string]bool{}
	for _, name := range p.Remove {
		key := http.CanonicalHeaderKey(name)
		if seen[key] {
			return bad("HeadersPolicyInvalid", "duplicate header removal: %q", key)
		}
		seen[key] = true
		if err := validate.Token(name, "header name"); err != nil {
			return bad("HeadersPolicyInvalid", "%v", err)
		}
		out.Remove = append(out.Remove, name)
	}
	if len(out.Set) == 0 && len(out.Remove) == 0 {
		out = nil
	}
	return out, host, nil
}

// serviceFilters are a service's header policies as the backendRef
// filters the backends take.
func serviceFilters(s *contourv1.Service, route, service int) ([]gatewayv1.HTTPRouteFilter, *problem) {
	if s.RequestHeadersPolicy == nil && s.ResponseHeadersPolicy == nil {
		return nil, nil
	}
	at := fmt.Sprintf("routes[%d].services[%d]", route, service)
	var out []gatewayv1.HTTPRouteFilter
	for _, p := range []struct {
		policy *contourv1.HeadersPolicy
		what   string
		typ    gatewayv1.HTTPRouteFilterType
	}{
		{s.RequestHeadersPolicy, at + ".requestHeadersPolicy", gatewayv1.HTTPRouteFilterRequestHeaderModifier},
		{s.ResponseHeadersPolicy, at + ".responseHeadersPolicy", gatewayv1.HTTPRouteFilterResponseHeaderModifier},
	} {
		m, _, bad := headers(p.policy, p.what, false)
		if bad != nil {
			return nil, bad
		}
		if m == nil {
			continue
		}
		f := &gatewayv1.HTTPHeaderFilter{Remove: m.Remove}
		for _, h := range m.Set {
			f.Set = append(f.Set, gatewayv1.HTTPHeader{Name: gatewayv1.HTTPHeaderName(h.Name), Value: h.Value})
		}
		hf := gatewayv1.HTTPRouteFilter{Type: p.typ}
		if p.typ == gatewayv1.HTTPRouteFilterRequestHeaderModifier {
			hf.RequestHeaderModifier = f
		} else {
			hf.ResponseHeaderModifier = f
		}
		out = append(out, hf)
	}
	return out, nil
}

// timeouts applies a timeout policy's response timeout ("infinity"
// disables it). The idle timeouts are not served yet.
func timeouts(r *ir.Route, tp *contourv1.TimeoutPolicy) *problem {
	if tp == nil {
		return nil
	}
	if tp.Idle != "" || tp.IdleConnection != "" {
		return refused(contourv1.ConditionTypeRouteError, "NotSupported", "timeoutPolicy.idle and timeoutPolicy.idleConnection are not supported yet")
	}
	switch tp.Response {
	case "":
	case "infinity", "infinite":
		r.TimeoutDisabled = true
	default:
		d, err := time.ParseDuration(tp.Response)
		if err != nil || d < 0 {
			return refused(contourv1.ConditionTypeRouteError, "TimeoutPolicyNotValid", fmt.Sprintf("route.timeoutPolicy failed to parse: error parsing response timeout: %q is not a duration", tp.Response))
		}
		if d == 0 {
			r.TimeoutDisabled = true
		} else {
			r.Timeout = d
		}
	}
	return nil
}

// redirect is a request redirect policy: scheme, hostname, port, status
// (302 unless set) and path. A prefix replacement is not served yet.
func redirect(p *contourv1.HTTPRequestRedirectPolicy) (*ir.Redirect, *problem) {
	if p.Prefix != nil {
		return nil, refused(contourv1.ConditionTypeRouteError, "NotSupported", "requestRedirectPolicy.prefix is not supported yet")
	}
	rd := &ir.Redirect{StatusCode: 302}
	if p.Scheme != nil {
		rd.Scheme = *p.Scheme
	}
	if p.Hostname != nil {
		if err := validate.Hostname(*p.Hostname, false); err != nil {
			return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", err.Error())
		}
		rd.Hostname = *p.Hostname
	}
	if p.Port != nil {
		rd.Port = uint32(*p.Port)
	}
	if p.StatusCode != nil {
		rd.StatusCode = int(*p.StatusCode)
	}
	if rd.StatusCode != 301 && rd.StatusCode != 302 {
		return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", fmt.Sprintf("statusCode %d is not 301 or 302", rd.StatusCode))
	}
	if p.Path != nil {
		if err := validate.Path("requestRedirectPolicy.path", *p.Path); err != nil {
			return nil, refused(contourv1.ConditionTypeRouteError, "RequestRedirectPolicy", err.Error())
		}
		rd.FullPath, rd.HasPath = *p.Path, true
	}
	return rd, nil
}
