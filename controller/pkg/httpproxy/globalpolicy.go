package httpproxy

import (
	"errors"
	"maps"
	"net/http"
	"slices"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/ir"
)

// withDefaults is a service's header policy with the profile's default
// (runtimeSettings.httpproxy.policy) under it, as Contour's
// headersPolicyService merges them: the service's value of a header
// wins, the default sets the others, and the removals add up.
func withDefaults(own *contourv1.HeadersPolicy, def *v1alpha1.HeadersPolicy) *contourv1.HeadersPolicy {
	if def == nil || len(def.Set) == 0 && len(def.Remove) == 0 {
		return own
	}
	out := &contourv1.HeadersPolicy{}
	if own != nil {
		out.Set, out.Remove = slices.Clone(own.Set), slices.Clone(own.Remove)
	}
	set := map[string]bool{}
	for _, h := range out.Set {
		set[http.CanonicalHeaderKey(h.Name)] = true
	}
	for _, name := range slices.Sorted(maps.Keys(def.Set)) {
		if !set[http.CanonicalHeaderKey(name)] {
			out.Set = append(out.Set, contourv1.HeaderValue{Name: name, Value: def.Set[name]})
		}
	}
	removed := map[string]bool{}
	for _, name := range out.Remove {
		removed[http.CanonicalHeaderKey(name)] = true
	}
	for _, name := range def.Remove {
		if key := http.CanonicalHeaderKey(name); !removed[key] {
			removed[key] = true
			out.Remove = append(out.Remove, name)
		}
	}
	return out
}

// GlobalHeaders are the profile's default header changes as a backend of
// namespace, service and port gets them (an Ingress's, with
// applyToIngress): its requests', its responses', and the host its
// requests get ("" to keep theirs). An error says what of the policy no
// backend can be given; then nothing of it applies.
func GlobalHeaders(pol *v1alpha1.GlobalHeadersPolicy, namespace, service string, port int) (req, resp *ir.HeaderModifier, host string, err error) {
	if pol == nil {
		return nil, nil, "", nil
	}
	vars := contourVars{namespace: namespace, service: service, port: port}
	var rw ir.Rewrite
	var bad *problem
	if req, rw, bad = headers(withDefaults(nil, pol.RequestHeaders), "runtimeSettings.httpproxy.policy.requestHeaders", "", "", literalHost, vars); bad != nil {
		return nil, nil, "", errors.New(bad.Message)
	}
	if resp, _, bad = headers(withDefaults(nil, pol.ResponseHeaders), "runtimeSettings.httpproxy.policy.responseHeaders", "", "", noHost, vars); bad != nil {
		return nil, nil, "", errors.New(bad.Message)
	}
	return req, resp, rw.Hostname, nil
}
