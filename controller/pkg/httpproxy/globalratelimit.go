package httpproxy

import (
	"cmp"
	"errors"
	"fmt"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// globalRateLimits reads a rateLimitPolicy.global's descriptors, as
// Contour does: each entry sets exactly one of genericKey,
// requestHeader, requestHeaderValueMatch and remoteAddress. Disabled, or
// none, is nil. typ and where are the sub-condition type and the place an
// error names.
func globalRateLimits(p *contourv1.GlobalRateLimitPolicy, typ, where string) ([]ir.RateLimitDescriptor, *problem) {
	if p == nil || p.Disabled {
		return nil, nil
	}
	var out []ir.RateLimitDescriptor
	for i, d := range p.Descriptors {
		var desc ir.RateLimitDescriptor
		for j := range d.Entries {
			e, err := rateLimitEntry(&d.Entries[j])
			if err != nil {
				return nil, refused(typ, "RateLimitPolicyNotValid", fmt.Sprintf("%s.rateLimitPolicy is invalid: global.descriptors[%d].entries[%d]: %v", where, i, j, err))
			}
			desc.Entries = append(desc.Entries, e)
		}
		if len(desc.Entries) == 0 {
			return nil, refused(typ, "RateLimitPolicyNotValid", fmt.Sprintf("%s.rateLimitPolicy is invalid: global.descriptors[%d] has no entries", where, i))
		}
		out = append(out, desc)
	}
	return out, nil
}

// virtualHostGlobalRateLimits are the descriptors of a root's virtual
// host: its own, else (unless its global policy is disabled) the rate
// limit service's default policy.
func (w *walk) virtualHostGlobalRateLimits(root *contourv1.HTTPProxy) ([]ir.RateLimitDescriptor, *problem) {
	var own *contourv1.GlobalRateLimitPolicy
	if rl := root.Spec.VirtualHost.RateLimitPolicy; rl != nil {
		own = rl.Global
	}
	d, bad := globalRateLimits(own, contourv1.ConditionTypeVirtualHostError, "Spec.VirtualHost")
	if bad != nil {
		return nil, bad
	}
	rls := w.opts.RateLimitService
	if len(d) == 0 && (own == nil || !own.Disabled) && rls != nil && rls.DefaultGlobalRateLimitPolicy != nil {
		if d, bad = globalRateLimits(rls.DefaultGlobalRateLimitPolicy, contourv1.ConditionTypeVirtualHostError, "the profile's defaultGlobalRateLimitPolicy"); bad != nil {
			return nil, bad
		}
	}
	if len(d) > 0 && rls == nil {
		w.status(root).Valid.AddWarning(contourv1.ConditionTypeVirtualHostError, "PolicyHasNoEffect",
			"Spec.VirtualHost.rateLimitPolicy.global takes effect only with the profile's httpproxy.rateLimitService")
		return nil, nil
	}
	if len(d) > 0 {
		w.checkRateLimitService(root)
	}
	return d, nil
}

// checkRateLimitService says on p's status when the rate limit service
// cannot be used: its requests are answered as when the service is
// down.
func (w *walk) checkRateLimitService(p *contourv1.HTTPProxy) {
	if w.rateLimitChecked[p] {
		return
	}
	if w.rateLimitChecked == nil {
		w.rateLimitChecked = map[*contourv1.HTTPProxy]bool{}
	}
	w.rateLimitChecked[p] = true
	// A walk of its own: the clusters the service needs are the
	// Gateway's, not the tree's; what it reads is still recorded.
	scratch := &walk{e: w.e, names: w.names, tree: &Tree{}}
	if _, _, msg := scratch.rateLimitService(w.opts.RateLimitService); msg != "" {
		w.status(p).Valid.AddError(contourv1.ConditionTypeVirtualHostError, "RateLimitServiceNotUsable", "the profile's httpproxy.rateLimitService: "+msg)
	}
}

// RateLimitService resolves the profile's rate limit service: the
// service, and the clusters it needs. When its ExtensionService cannot be
// used, msg says why, and the service's cluster is one to build without
// endpoints: Envoy answers as when the service is down.
func RateLimitService(e env.Env, names *backend.Names, s *v1alpha1.RateLimitServiceSettings) (svc *ir.RateLimitService, clusters []backend.ClusterSpec, msg string) {
	w := &walk{e: e, names: names, tree: &Tree{}}
	return w.rateLimitService(s)
}

func (w *walk) rateLimitService(s *v1alpha1.RateLimitServiceSettings) (*ir.RateLimitService, []backend.ClusterSpec, string) {
	ref := types.NamespacedName{Namespace: s.ExtensionService.Namespace, Name: s.ExtensionService.Name}
	out := &ir.RateLimitService{
		Cluster: "ratelimit/" + ref.Namespace + "/" + ref.Name, Domain: cmp.Or(s.Domain, "contour"),
		FailOpen: s.FailOpen, XRateLimitHeaders: s.EnableXRateLimitHeaders, ResourceExhausted: s.EnableResourceExhaustedCode,
	}
	before := len(w.tree.Clusters)
	ext, msg := w.usableExtension(ref)
	if msg != "" {
		return out, nil, msg
	}
	out.Cluster, out.Authority, out.Timeout = ext.cluster, ext.sni, ext.timeout
	return out, w.tree.Clusters[before:], ""
}

// routeGlobalRateLimits applies route i's global policy to out: its
// descriptors in place of the virtual host's, or none of them when it is
// disabled.
func (w *walk) routeGlobalRateLimits(p *contourv1.HTTPProxy, i int, rl *contourv1.RateLimitPolicy, out *ir.Route) *problem {
	if rl == nil || rl.Global == nil {
		return nil
	}
	if rl.Global.Disabled {
		out.IgnoreVirtualHostRateLimits = true
		return nil
	}
	d, bad := globalRateLimits(rl.Global, contourv1.ConditionTypeRouteError, fmt.Sprintf("routes[%d]", i))
	if bad != nil {
		return bad
	}
	if len(d) > 0 && w.opts.RateLimitService == nil {
		w.warn(p, i, "PolicyHasNoEffect", "rateLimitPolicy.global takes effect only with the profile's httpproxy.rateLimitService")
		return nil
	}
	if len(d) > 0 {
		w.checkRateLimitService(p)
	}
	out.GlobalRateLimits = d
	return nil
}

func rateLimitEntry(e *contourv1.RateLimitDescriptorEntry) (ir.RateLimitEntry, error) {
	set := 0
	for _, ok := range []bool{e.GenericKey != nil, e.RequestHeader != nil, e.RequestHeaderValueMatch != nil, e.RemoteAddress != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return ir.RateLimitEntry{}, errors.New("rate limit descriptor entry must have exactly one field set")
	}
	switch {
	case e.GenericKey != nil:
		g := e.GenericKey
		if g.Value == "" {
			return ir.RateLimitEntry{}, errors.New("genericKey needs a value")
		}
		if err := errors.Join(validate.Text(g.Key, "genericKey.key"), validate.Text(g.Value, "genericKey.value")); err != nil {
			return ir.RateLimitEntry{}, err
		}
		return ir.RateLimitEntry{Key: g.Key, Value: g.Value}, nil
	case e.RequestHeader != nil:
		h := e.RequestHeader
		if err := validate.Token(h.HeaderName, "requestHeader.headerName"); err != nil {
			return ir.RateLimitEntry{}, err
		}
		if h.DescriptorKey == "" {
			return ir.RateLimitEntry{}, errors.New("requestHeader needs a descriptorKey")
		}
		if err := validate.Text(h.DescriptorKey, "requestHeader.descriptorKey"); err != nil {
			return ir.RateLimitEntry{}, err
		}
		return ir.RateLimitEntry{Key: h.DescriptorKey, Header: h.HeaderName}, nil
	case e.RequestHeaderValueMatch != nil:
		m := e.RequestHeaderValueMatch
		if m.Value == "" {
			return ir.RateLimitEntry{}, errors.New("requestHeaderValueMatch needs a value")
		}
		if len(m.Headers) == 0 {
			return ir.RateLimitEntry{}, errors.New("requestHeaderValueMatch needs headers to match")
		}
		if err := validate.Text(m.Value, "requestHeaderValueMatch.value"); err != nil {
			return ir.RateLimitEntry{}, err
		}
		out := ir.RateLimitEntry{Value: m.Value, ExpectMatch: m.ExpectMatch}
		for k := range m.Headers {
			sm, err := headerMatch(&m.Headers[k])
			if err != nil {
				return ir.RateLimitEntry{}, err
			}
			out.Headers = append(out.Headers, sm)
		}
		return out, nil
	}
	return ir.RateLimitEntry{RemoteAddress: true}, nil
}
