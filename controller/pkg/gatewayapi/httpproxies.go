package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/ingressclass"
	"isobar.dev/api/refgrant"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/httpproxy"
	"isobar.dev/controller/pkg/ingress"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/validate"
)

// proxySets finds the HTTPProxies the Gateway serves (those of its
// IngressClasses, on its Ingress listeners), the roots among them it
// translates (t.roots), and returns the listeners of the roots' TLS
// virtual hosts, a set per root.
func (t *gatewayTranslator) proxySets(res *resources.Resources) []*listenerSet {
	t.proxies = ingressclass.SelectedProxies(t.gw, string(t.controller), res.IngressClasses, res.HTTPProxies)
	if len(t.proxies) == 0 {
		return nil
	}
	shape, err := ingress.ShapeOf(t.gw)
	if err != nil {
		for _, p := range t.proxies {
			t.proxyStatus(key(p.Namespace, p.Name), httpproxy.Invalid(p, contourv1.ConditionTypeListenerError, "ErrorIdentifyingListener", err.Error()))
		}
		t.proxies = nil
		return nil
	}
	t.ingressShape = &shape
	served := make(map[*contourv1.HTTPProxy]bool, len(t.proxies))
	var named []*contourv1.HTTPProxy // roots with an FQDN
	for _, p := range t.proxies {
		served[p] = true
		if p.Spec.VirtualHost != nil && p.Spec.VirtualHost.Fqdn != "" {
			named = append(named, p)
		}
	}
	settings := t.profile.HTTPProxyOrDefault()
	t.proxyOptions = httpproxy.Options{
		RootNamespaces:            settings.RootNamespaces,
		DisablePermitInsecure:     settings.DisablePermitInsecure,
		EnableExternalNameService: settings.EnableExternalNameService,
		RateLimitService:          settings.RateLimitService,
		Policy:                    settings.Policy,
		GlobalExtAuth:             t.profile.GlobalExtAuth,
		FallbackChain:             shape.HTTPS != nil && shape.HTTPS.Hostname == nil,
		FallbackCertificate:       fallbackOf(settings),
		Serves:                    func(p *contourv1.HTTPProxy) bool { return served[p] },
	}
	if shape.HTTPS != nil {
		t.httpsPort = int32(shape.HTTPS.Port)
	}
	t.duplicates = httpproxy.Duplicates(named)
	for _, r := range t.proxies {
		if _, dup := t.duplicates[key(r.Namespace, r.Name)]; !dup && r.Spec.VirtualHost != nil {
			t.roots = append(t.roots, r)
		}
	}
	// Roots oldest first: their TLS listeners come in that order.
	slices.SortFunc(t.roots, func(a, b *contourv1.HTTPProxy) int { return engine.CompareRoutes(&a.ObjectMeta, &b.ObjectMeta) })
	var sets []*listenerSet
	for _, r := range t.roots {
		if r.Spec.VirtualHost.TLS == nil || shape.HTTPS == nil || validate.Hostname(r.Spec.VirtualHost.Fqdn, true) != nil {
			continue
		}
		if r.Spec.VirtualHost.TLS.Passthrough {
			// Connections for the FQDN pass through to the tcpproxy.
			host := gatewayv1.Hostname(r.Spec.VirtualHost.Fqdn)
			sets = append(sets, &listenerSet{meta: &r.ObjectMeta, proxy: r, entries: []gatewayv1.ListenerEntry{{
				Name: "tls", Hostname: &host, Port: shape.HTTPS.Port, Protocol: gatewayv1.TLSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModePassthrough)},
			}}})
		} else if ns, secret, err := httpproxy.TLSSecret(r); err == nil {
			host := gatewayv1.Hostname(r.Spec.VirtualHost.Fqdn)
			ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(secret)}
			if ns != r.Namespace {
				ref.Namespace = ptr.To(gatewayv1.Namespace(ns))
			}
			sets = append(sets, &listenerSet{meta: &r.ObjectMeta, proxy: r, entries: []gatewayv1.ListenerEntry{{
				Name: "tls", Hostname: &host, Port: shape.HTTPS.Port, Protocol: gatewayv1.HTTPSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref}},
			}}})
		}
	}
	return sets
}

// attachHTTPProxy adds the routes of a root HTTPProxy's tree to the
// virtual host of its FQDN on ingress-http and on its TLS listener, as its
// outcome; the statuses of the tree's proxies go with it.
func (t *gatewayTranslator) attachHTTPProxy(root *contourv1.HTTPProxy, rank int32) {
	o := t.record("HTTPProxy", &root.ObjectMeta, rank)
	if o == nil {
		return
	}
	defer t.state.Apply(o)
	tree := httpproxy.Root(t.newEnv(&o.Reads), &t.cache.Names, root, t.proxyOptions, t.httpsPort)
	o.Clusters, o.Detail = tree.Clusters, &detail{proxyStatuses: tree.Statuses, chainTLS: tree.TLS}
	add := func(l *listener, routes []*ir.Route, policy *ir.VirtualHostPolicy) {
		if len(routes) > 0 && !t.addHost(o, l, tree.FQDN, [][]*ir.Route{routes}, policy) {
			o.Detail.problems = append(o.Detail.problems, fmt.Sprintf("listener %s of Gateway %s/%s does not serve %s", l.spec.Name, t.gw.Namespace, t.gw.Name, tree.FQDN))
		}
	}
	add(t.listeners[0], tree.HTTP, tree.Policy)
	for _, l := range t.listeners {
		if l.set != nil && l.set.proxy == root {
			add(l, tree.HTTPS, tree.HTTPSPolicy())
		}
	}
}

// reportHTTPProxies writes the status of every HTTPProxy the Gateway
// serves: those of the trees of its roots (a proxy in two trees has the
// errors of both), the roots whose FQDN another root has, and orphaned for
// the others. What depends on other objects (the listener of a TLS
// virtual host, a route with the same match that takes precedence) is
// found again on every translation.
func (t *gatewayTranslator) reportHTTPProxies() {
	// Statuses are shared with the outcomes that hold them until one
	// needs a change: own copies it first.
	out := make(map[types.NamespacedName]*httpproxy.Status, len(t.proxies))
	var owned map[types.NamespacedName]bool
	own := func(k types.NamespacedName) *httpproxy.Status {
		if !owned[k] {
			if owned == nil {
				owned = map[types.NamespacedName]bool{}
			}
			out[k], owned[k] = &httpproxy.Status{Valid: *out[k].Valid.DeepCopy()}, true
		}
		return out[k]
	}
	for k, s := range t.duplicates {
		out[k] = s
	}
	merge := func(k types.NamespacedName, s *httpproxy.Status) {
		cur, ok := out[k]
		if !ok {
			out[k] = s
			return
		}
		for _, e := range s.Valid.Errors {
			if !slices.Contains(cur.Valid.Errors, e) {
				own(k).Valid.AddError(e.Type, e.Reason, e.Message)
				cur = out[k]
			}
		}
	}
	for _, r := range t.roots {
		o := t.state.Applied(&r.ObjectMeta)
		if o == nil {
			continue
		}
		d := o.Detail // every root's outcome has one
		for _, ps := range d.proxyStatuses {
			merge(ps.Proxy, ps.Status)
		}
		rk := key(r.Namespace, r.Name)
		for _, p := range d.problems {
			own(rk).Valid.AddError(contourv1.ConditionTypeListenerError, "ErrorIdentifyingListener", p)
		}
		for _, l := range t.listeners {
			if l.set == nil || l.set.proxy != r {
				continue
			}
			if _, found := out[rk].Valid.GetError(contourv1.ConditionTypeTLSError); found {
				break // the tree's own check said what is wrong with the Secret
			}
			if p := l.servingProblem(); p != nil {
				typ, reason := contourv1.ConditionTypeTLSError, "SecretNotValid"
				switch {
				case p.Type == gatewayv1.ListenerConditionConflicted:
					// Another object's listener has the host: the
					// message names it.
					typ, reason = contourv1.ConditionTypeVirtualHostError, string(p.Reason)
				case p.Reason == gatewayv1.ListenerReasonRefNotPermitted:
					reason = "DelegationNotPermitted"
				}
				own(rk).Valid.AddErrorf(typ, reason, "TLS virtual host %s: %s", l.hostname, p.Message)
			}
		}
		t.state.Shadowed(o, func(h string, r *ir.Route, by *metav1.ObjectMeta) {
			own(rk).Valid.AddWarningf(contourv1.ConditionTypeRouteError, "RouteShadowed", "host %s, path %s: %s has the same match and takes precedence", h, r.Match.Path, t.describeOwner(by))
		})
	}
	for _, p := range t.proxies {
		k := key(p.Namespace, p.Name)
		if _, ok := out[k]; !ok {
			out[k] = httpproxy.Orphaned(p)
		}
	}
	t.reportExtensionServices()
	keys := make([]types.NamespacedName, 0, len(out))
	statuses := make([]*httpproxy.Status, 0, len(out))
	for k, s := range out {
		keys, statuses = append(keys, k), append(statuses, s)
	}
	gw := key(t.gw.Namespace, t.gw.Name)
	if len(t.status.HTTPProxies) == 0 {
		t.status.HTTPProxies = make(map[types.NamespacedName]*HTTPProxyStatus, len(keys))
	}
	written := make([]HTTPProxyStatus, len(keys))
	for i, st := range httpproxy.Statuses(statuses) {
		written[i] = HTTPProxyStatus{Gateway: gw, Status: st}
		t.status.HTTPProxies[keys[i]] = &written[i]
	}
}

// rateLimitService resolves the profile's rate limit service for the
// Gateway's connection managers, when it serves HTTPProxies: the service
// and its cluster, one without endpoints when its ExtensionService cannot
// be used (the proxies with descriptors say why).
func (t *gatewayTranslator) rateLimitService() *ir.RateLimitService {
	s := t.proxyOptions.RateLimitService
	if s == nil || len(t.proxies) == 0 {
		return nil
	}
	svc, clusters, msg := httpproxy.RateLimitService(t.env, &t.cache.Names, s)
	for _, c := range clusters {
		t.ensureCluster(c)
	}
	if msg != "" {
		t.clusters[svc.Cluster] = &ir.Cluster{Name: svc.Cluster, HTTP2: true}
	}
	k := key(s.ExtensionService.Namespace, s.ExtensionService.Name)
	if x, ok := t.env.ExtensionService(k.Namespace, k.Name); ok {
		t.status.ExtensionServices[k] = httpproxy.ExtensionStatus(t.env, nil, x)
	}
	return svc
}

// reportExtensionServices writes the status of the ExtensionServices the
// Gateway's roots authorize with.
func (t *gatewayTranslator) reportExtensionServices() {
	for _, r := range t.roots {
		vh := r.Spec.VirtualHost
		if vh == nil || vh.Authorization == nil || vh.Authorization.ExtensionServiceRef.Name == "" {
			continue
		}
		ref := vh.Authorization.ExtensionServiceRef
		k := key(cmp.Or(ref.Namespace, r.Namespace), ref.Name)
		if _, done := t.status.ExtensionServices[k]; done {
			continue
		}
		if k.Namespace != r.Namespace && !t.env.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: r.Namespace},
			k.Namespace, refgrant.To{Group: contourv1.GroupName, Kind: "ExtensionService", Name: k.Name}) {
			continue // not the root's to use, nor to report on
		}
		if x, ok := t.env.ExtensionService(k.Namespace, k.Name); ok {
			t.status.ExtensionServices[k] = httpproxy.ExtensionStatus(t.env, nil, x)
		}
	}
}

// proxyStatus records the status of an HTTPProxy the Gateway serves.
func (t *gatewayTranslator) proxyStatus(k types.NamespacedName, s *httpproxy.Status) {
	t.status.HTTPProxies[k] = &HTTPProxyStatus{Gateway: key(t.gw.Namespace, t.gw.Name), Status: s.HTTPProxyStatus()}
}

// fallbackOf is the profile's fallback certificate for HTTPProxies.
func fallbackOf(s v1alpha1.HTTPProxySettings) *types.NamespacedName {
	if s.FallbackCertificate == nil {
		return nil
	}
	return &types.NamespacedName{Namespace: s.FallbackCertificate.Namespace, Name: s.FallbackCertificate.Name}
}
