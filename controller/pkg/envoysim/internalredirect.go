package envoysim

import (
	"net/url"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previousroutesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/previous_routes/v3"
	safecrossschemev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/safe_cross_scheme/v3"
)

// InternalRedirect is a route's internal_redirect_policy: the redirects
// of its backends that Envoy follows itself, routing the request again to
// the Location, instead of passing them to the client.
type InternalRedirect struct {
	// Max is how many redirects one request may follow.
	Max int `json:"max"`
	// Codes are the statuses followed.
	Codes []int `json:"codes"`
	// CrossScheme lets a redirect change the scheme; SafeCrossScheme
	// then only from https to http.
	CrossScheme     bool `json:"crossScheme,omitempty"`
	SafeCrossScheme bool `json:"safeCrossScheme,omitempty"`
	// PreviousRoutes refuses a redirect to a route that a previous
	// redirect from this route went to.
	PreviousRoutes bool `json:"previousRoutes,omitempty"`
}

// Hop is an internal redirect a request followed: from a route to the
// route the Location led to.
type Hop struct{ From, To string }

func internalRedirectOf(p *routev3.InternalRedirectPolicy) (*InternalRedirect, error) {
	if p == nil {
		return nil, nil
	}
	if err := understand(p, "max_internal_redirects", "redirect_response_codes", "predicates", "allow_cross_scheme_redirect"); err != nil {
		return nil, err
	}
	out := &InternalRedirect{Max: 1, CrossScheme: p.GetAllowCrossSchemeRedirect()}
	if p.GetMaxInternalRedirects() != nil {
		out.Max = int(p.GetMaxInternalRedirects().GetValue())
	}
	// Envoy follows only these, whatever else the policy lists.
	for _, c := range p.GetRedirectResponseCodes() {
		if c == 301 || c == 302 || c == 303 || c == 307 || c == 308 {
			out.Codes = append(out.Codes, int(c))
		}
	}
	if len(p.GetRedirectResponseCodes()) == 0 {
		out.Codes = []int{302}
	}
	for _, pr := range p.GetPredicates() {
		if err := understand(pr, "name", "typed_config"); err != nil {
			return nil, err
		}
		switch pr.GetName() {
		case "envoy.internal_redirect_predicates.safe_cross_scheme":
			if _, err := unpack[safecrossschemev3.SafeCrossSchemeConfig](pr.GetTypedConfig(), "safe cross scheme predicate"); err != nil {
				return nil, err
			}
			out.SafeCrossScheme = true
		case "envoy.internal_redirect_predicates.previous_routes":
			if _, err := unpack[previousroutesv3.PreviousRoutesConfig](pr.GetTypedConfig(), "previous routes predicate"); err != nil {
				return nil, err
			}
			out.PreviousRoutes = true
		default:
			return nil, errUnsupportedf("internal redirect predicate %s", pr.GetName())
		}
	}
	return out, nil
}

// Follow is what Envoy does when the backend a forwarded req went to
// answers status with location: if the route's internal redirect policy
// takes it, the request Envoy routes in its stead (to the Location, with
// x-envoy-original-url; a 303 becomes a GET without a body) and that
// request's answer. ok is false when the client gets the redirect.
func (s *Simulator) Follow(req Request, a *Answer, status int, location string) (next Request, answer *Answer, ok bool, err error) {
	p := a.InternalRedirect
	if p == nil || !slices.Contains(p.Codes, status) || len(req.Redirected) >= p.Max {
		return req, nil, false, nil
	}
	// Envoy follows an absolute http or https URL only.
	u, err := url.Parse(location)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return req, nil, false, nil
	}
	r := newHTTPRequest(req)
	if u.Scheme != r.scheme && (!p.CrossScheme || p.SafeCrossScheme && r.scheme == "http") {
		return req, nil, false, nil
	}
	next = req
	next.Scheme, next.Authority, next.Path = u.Scheme, u.Host, u.RequestURI()
	next.Headers = slices.DeleteFunc(slices.Clone(req.Headers), func(h Header) bool {
		switch strings.ToLower(h.Name) {
		case "x-envoy-original-url", "host", ":authority", ":path", ":scheme":
			return true
		case "content-length", "content-type", "transfer-encoding":
			return status == 303 && r.method != "HEAD"
		}
		return false
	})
	next.Headers = append(next.Headers, Header{Name: "x-envoy-original-url", Value: r.scheme + "://" + r.authority + r.path})
	if status == 303 && r.method != "HEAD" {
		next.Method = "GET"
	}
	next.Replay = false
	if answer, err = s.Simulate(next); err != nil {
		return req, nil, false, err
	}
	hop := Hop{From: a.Route, To: answer.Route}
	if p.PreviousRoutes && slices.Contains(req.Redirected, hop) {
		return req, nil, false, nil
	}
	next.Redirected = append(slices.Clip(req.Redirected), hop)
	return next, answer, true, nil
}
