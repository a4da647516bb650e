// Package httpproxies is the processor of Contour's HTTPProxy: which
// HTTPProxies a Gateway serves (those of its IngressClasses, on its
// Ingress listeners), the roots it attaches, each tree's routes on the
// Gateway's listeners, and every served proxy's status.
package httpproxies

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
	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/httpproxy"
	"isobar.dev/controller/pkg/ingress"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate/ingresses"
	"isobar.dev/controller/pkg/validate"
)

// Status is the status of an HTTPProxy a Gateway serves, but the load
// balancer status, which comes from the Gateway's addresses.
type Status struct {
	Gateway types.NamespacedName
	Status  contourv1.HTTPProxyStatus
}

// Processor translates the HTTPProxies of one translation, for every
// Gateway, and holds the statuses of those served.
type Processor map[types.NamespacedName]*Status

// ForGateway starts the processor's work on one Gateway.
func (p Processor) ForGateway(g *gatewayapi.Gateway) gatewayapi.GatewayProcessor {
	return &gateway{g: g, out: p}
}

// gateway is the processor's work on one Gateway.
type gateway struct {
	g   *gatewayapi.Gateway
	out map[types.NamespacedName]*Status
	// proxies are the HTTPProxies the Gateway serves, roots the root
	// proxies among them it translates, and duplicates the roots it does
	// not because another root has their FQDN. options and httpsPort are
	// what translating a root needs.
	proxies, roots []*contourv1.HTTPProxy
	byMeta         map[*metav1.ObjectMeta]*contourv1.HTTPProxy
	// listeners are the Gateway's, once validated.
	duplicates map[types.NamespacedName]*httpproxy.Status
	options    httpproxy.Options
	httpsPort  int32
}

// detail is what a root's outcome keeps beside the engine's: what
// attaching it found, the statuses of the proxies of its tree, and what
// its TLS virtual host asks of its filter chain.
type detail struct {
	problems      []string
	proxyStatuses []httpproxy.ProxyStatus
	chainTLS      *ir.ChainTLS
}

// Select finds the HTTPProxies the Gateway serves, the roots among them
// it translates, and the listeners of the roots' TLS virtual hosts, a set
// per root.
func (t *gateway) Select(res *resources.Resources) gatewayapi.Selection {
	sel := gatewayapi.Selection{Kind: "HTTPProxy", Source: engine.FromHTTPProxy, Rekeyed: true}
	gw := t.g.Object()
	t.proxies = ingressclass.SelectedProxies(gw, t.g.Controller(), res.IngressClasses, res.HTTPProxies)
	if len(t.proxies) == 0 {
		return sel
	}
	shape, err := ingress.ShapeOf(gw)
	if err != nil {
		for _, p := range t.proxies {
			t.proxyStatus(key(p.Namespace, p.Name), httpproxy.Invalid(p, contourv1.ConditionTypeListenerError, "ErrorIdentifyingListener", err.Error()))
		}
		t.proxies = nil
		return sel
	}
	sel.Names = ingresses.EnvoyNames()
	served := make(map[*contourv1.HTTPProxy]bool, len(t.proxies))
	var named []*contourv1.HTTPProxy // roots with an FQDN
	for _, p := range t.proxies {
		served[p] = true
		if p.Spec.VirtualHost != nil && p.Spec.VirtualHost.Fqdn != "" {
			named = append(named, p)
		}
	}
	profile := t.g.Profile()
	settings := profile.HTTPProxyOrDefault()
	t.options = httpproxy.Options{
		RootNamespaces:            settings.RootNamespaces,
		DisablePermitInsecure:     settings.DisablePermitInsecure,
		EnableExternalNameService: settings.EnableExternalNameService,
		RateLimitService:          settings.RateLimitService,
		Policy:                    settings.Policy,
		GlobalExtAuth:             profile.GlobalExtAuth,
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
	t.byMeta = make(map[*metav1.ObjectMeta]*contourv1.HTTPProxy, len(t.roots))
	for _, r := range t.roots {
		t.byMeta[&r.ObjectMeta] = r
		sel.Routes = append(sel.Routes, &r.ObjectMeta)
	}
	for _, r := range t.roots {
		if r.Spec.VirtualHost.TLS == nil || shape.HTTPS == nil || validate.Hostname(r.Spec.VirtualHost.Fqdn, true) != nil {
			continue
		}
		if r.Spec.VirtualHost.TLS.Passthrough {
			// Connections for the FQDN pass through to the tcpproxy.
			host := gatewayv1.Hostname(r.Spec.VirtualHost.Fqdn)
			sel.Sets = append(sel.Sets, t.set(r, gatewayv1.ListenerEntry{
				Name: "tls", Hostname: &host, Port: shape.HTTPS.Port, Protocol: gatewayv1.TLSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModePassthrough)},
			}))
		} else if ns, secret, err := httpproxy.TLSSecret(r); err == nil {
			host := gatewayv1.Hostname(r.Spec.VirtualHost.Fqdn)
			ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(secret)}
			if ns != r.Namespace {
				ref.Namespace = ptr.To(gatewayv1.Namespace(ns))
			}
			sel.Sets = append(sel.Sets, t.set(r, gatewayv1.ListenerEntry{
				Name: "tls", Hostname: &host, Port: shape.HTTPS.Port, Protocol: gatewayv1.HTTPSProtocolType,
				TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref}},
			}))
		}
	}
	return sel
}

// set is the listener of a root's TLS virtual host, whose chain is what
// the root's attached tree asks.
func (t *gateway) set(r *contourv1.HTTPProxy, e gatewayv1.ListenerEntry) *listener.Set {
	return &listener.Set{
		Meta: &r.ObjectMeta, Entries: []gatewayv1.ListenerEntry{e},
		Group: contourv1.GroupName, Kind: "HTTPProxy", Grant: "TLSCertificateDelegation", Noun: "TLS virtual host",
		ChainTLS: func() *ir.ChainTLS {
			if o := t.g.Applied(&r.ObjectMeta); o != nil {
				return o.Detail.(*detail).chainTLS
			}
			return nil
		},
		Fallback: t.options.FallbackCertificate,
	}
}

// ownListeners are the listeners of a root's TLS virtual host.
func (t *gateway) ownListeners(r *contourv1.HTTPProxy) []*listener.Listener {
	var out []*listener.Listener
	for _, l := range t.g.Listeners() {
		if s := l.Set; s != nil && s.Meta == &r.ObjectMeta {
			out = append(out, l)
		}
	}
	return out
}

// Attach adds the routes of a root HTTPProxy's tree to the virtual host
// of its FQDN on ingress-http and on its TLS listener, as its outcome; the
// statuses of the tree's proxies go with it.
func (t *gateway) Attach(o *gatewayapi.Outcome, meta *metav1.ObjectMeta) {
	root := t.byMeta[meta]
	tree := httpproxy.Root(t.g.EnvFor(o), t.g.Names(), root, t.options, t.httpsPort)
	d := &detail{proxyStatuses: tree.Statuses, chainTLS: tree.TLS}
	o.Clusters, o.Detail = tree.Clusters, d
	gw := t.g.Key()
	add := func(l *listener.Listener, routes []*ir.Route, policy *ir.VirtualHostPolicy) {
		if len(routes) > 0 && !t.g.AddHost(o, l, tree.FQDN, [][]*ir.Route{routes}, policy) {
			d.problems = append(d.problems, fmt.Sprintf("listener %s of Gateway %s/%s does not serve %s", l.Spec.Name, gw.Namespace, gw.Name, tree.FQDN))
		}
	}
	add(t.g.Listeners()[0], tree.HTTP, tree.Policy)
	for _, l := range t.ownListeners(root) {
		add(l, tree.HTTPS, tree.HTTPSPolicy())
	}
}

// Report records the status of every HTTPProxy the Gateway serves: those of the trees of its roots (a proxy in two trees has the
// errors of both), the roots whose FQDN another root has, and orphaned for
// the others. What depends on other objects (the listener of a TLS
// virtual host, a route with the same match that takes precedence) is
// found again on every translation.
func (t *gateway) Report() {
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
		o := t.g.Applied(&r.ObjectMeta)
		if o == nil {
			continue
		}
		d := o.Detail.(*detail) // every root's outcome has one
		for _, ps := range d.proxyStatuses {
			merge(ps.Proxy, ps.Status)
		}
		rk := key(r.Namespace, r.Name)
		for _, p := range d.problems {
			own(rk).Valid.AddError(contourv1.ConditionTypeListenerError, "ErrorIdentifyingListener", p)
		}
		for _, l := range t.ownListeners(r) {
			if _, found := out[rk].Valid.GetError(contourv1.ConditionTypeTLSError); found {
				break // the tree's own check said what is wrong with the Secret
			}
			if p := l.ServingProblem(); p != nil {
				typ, reason := contourv1.ConditionTypeTLSError, "SecretNotValid"
				switch {
				case p.Type == gatewayv1.ListenerConditionConflicted:
					// Another object's listener has the host: the
					// message names it.
					typ, reason = contourv1.ConditionTypeVirtualHostError, string(p.Reason)
				case p.Reason == gatewayv1.ListenerReasonRefNotPermitted:
					reason = "DelegationNotPermitted"
				}
				own(rk).Valid.AddErrorf(typ, reason, "TLS virtual host %s: %s", l.Hostname, p.Message)
			}
		}
		t.g.Shadowed(o, func(h string, r *ir.Route, by *metav1.ObjectMeta) {
			own(rk).Valid.AddWarningf(contourv1.ConditionTypeRouteError, "RouteShadowed", "host %s, path %s: %s has the same match and takes precedence", h, r.Match.Path, t.g.DescribeOwner(by))
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
	gw := t.g.Key()
	written := make([]Status, len(keys))
	for i, st := range httpproxy.Statuses(statuses) {
		written[i] = Status{Gateway: gw, Status: st}
		t.out[keys[i]] = &written[i]
	}
}

// RateLimit resolves the profile's rate limit service for the Gateway's
// connection managers, when it serves HTTPProxies: the service and its
// cluster, one without endpoints when its ExtensionService cannot be used
// (the proxies with descriptors say why).
func (t *gateway) RateLimit() *ir.RateLimitService {
	s := t.options.RateLimitService
	if s == nil || len(t.proxies) == 0 {
		return nil
	}
	e := t.g.Env()
	svc, clusters, msg := httpproxy.RateLimitService(e, t.g.Names(), s)
	for _, c := range clusters {
		t.g.EnsureCluster(c)
	}
	if msg != "" {
		t.g.AddCluster(&ir.Cluster{Name: svc.Cluster, HTTP2: true})
	}
	k := key(s.ExtensionService.Namespace, s.ExtensionService.Name)
	if x, ok := e.ExtensionService(k.Namespace, k.Name); ok {
		t.g.ReportExtensionService(k, httpproxy.ExtensionStatus(e, nil, x))
	}
	return svc
}

// reportExtensionServices writes the status of the ExtensionServices the
// Gateway's roots authorize with.
func (t *gateway) reportExtensionServices() {
	for _, r := range t.roots {
		vh := r.Spec.VirtualHost
		if vh == nil || vh.Authorization == nil || vh.Authorization.ExtensionServiceRef.Name == "" {
			continue
		}
		ref := vh.Authorization.ExtensionServiceRef
		k := key(cmp.Or(ref.Namespace, r.Namespace), ref.Name)
		if t.g.ExtensionServiceReported(k) {
			continue
		}
		e := t.g.Env()
		if k.Namespace != r.Namespace && !e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: r.Namespace},
			k.Namespace, refgrant.To{Group: contourv1.GroupName, Kind: "ExtensionService", Name: k.Name}) {
			continue // not the root's to use, nor to report on
		}
		if x, ok := e.ExtensionService(k.Namespace, k.Name); ok {
			t.g.ReportExtensionService(k, httpproxy.ExtensionStatus(e, nil, x))
		}
	}
}

// proxyStatus records the status of an HTTPProxy the Gateway serves.
func (t *gateway) proxyStatus(k types.NamespacedName, s *httpproxy.Status) {
	t.out[k] = &Status{Gateway: t.g.Key(), Status: s.HTTPProxyStatus()}
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// fallbackOf is the profile's fallback certificate for HTTPProxies.
func fallbackOf(s v1alpha1.HTTPProxySettings) *types.NamespacedName {
	if s.FallbackCertificate == nil {
		return nil
	}
	return &types.NamespacedName{Namespace: s.FallbackCertificate.Namespace, Name: s.FallbackCertificate.Name}
}
