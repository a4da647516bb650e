// Package httpproxy serves Contour's HTTPProxy (projectcontour.io/v1) on a
// Gateway's Ingress listeners, with Contour's semantics and status: a
// processor beside the Gateway API's and Ingress's. A root proxy (one with
// spec.virtualhost) and the proxies it includes, across namespaces, make
// one tree; Root translates a tree into the IR routes of its virtual host,
// reading the snapshot only through an env.Env, so that the engine keeps a
// tree while nothing it read (the proxies it includes, the Services of its
// routes) changes.
package httpproxy

import (
	"cmp"
	"slices"
	"strings"

	"isobar.dev/api/v1alpha1"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Options are the profile's settings for HTTPProxy, with Contour's names.
type Options struct {
	// RootNamespaces are the namespaces root proxies may be in
	// (httpproxy.rootNamespaces); none means every namespace.
	RootNamespaces []string
	// DisablePermitInsecure redirects every plain HTTP request of a TLS
	// virtual host, whatever a route's permitInsecure says
	// (httpproxy.disablePermitInsecure).
	DisablePermitInsecure bool
	// FallbackCertificate is the Secret presented to clients without a
	// server name, for the virtual hosts that enable it
	// (httpproxy.fallbackCertificate); nil for none.
	FallbackCertificate *types.NamespacedName
	// FallbackChain says the Gateway's ingress-https listener has no
	// hostname: its filter chain takes connections without a server
	// name, and serves the virtual hosts that enable the fallback.
	FallbackChain bool
	// EnableExternalNameService lets services be ExternalName Services
	// (enableExternalNameService); off, a route to one is an error.
	EnableExternalNameService bool
	// RateLimitService is the Gateway's rate limit service
	// (httpproxy.rateLimitService): without one, global descriptors take
	// no effect, and the proxy warns. Its defaultGlobalRateLimitPolicy
	// applies to the virtual hosts without a global policy.
	RateLimitService *v1alpha1.RateLimitServiceSettings
	// Policy are the profile's default header changes of every service
	// (httpproxy.policy); nil for none.
	Policy *v1alpha1.GlobalHeadersPolicy
	// GlobalExtAuth is the Gateway's global authorization server
	// (runtimeSettings.globalExtAuth): it checks every route whose policy
	// does not disable it, on plain and TLS virtual hosts, unless a TLS
	// root names a server of its own; nil for none. Only its policy is
	// read here; the server is resolved once for the Gateway.
	GlobalExtAuth *v1alpha1.GlobalExtAuthSettings
	// Serves says whether the Gateway serves a proxy: its ingress class
	// names one of the Gateway's IngressClasses. An include of a proxy it
	// does not serve is an include of a proxy that does not exist.
	Serves func(*contourv1.HTTPProxy) bool
}

// The statuses Contour writes in status.currentStatus.
const (
	StatusValid    = "valid"
	StatusInvalid  = "invalid"
	StatusOrphaned = "orphaned"
)

// Status is what Isobar writes on an HTTPProxy: status.currentStatus,
// status.description and the Valid condition, with Contour's error
// sub-conditions (the load balancer status comes from the Gateway).
type Status struct {
	Valid contourv1.DetailedCondition
}

func newStatus(p *contourv1.HTTPProxy) *Status {
	s := &Status{}
	s.Valid.Type = contourv1.ValidConditionType
	s.Valid.Status = contourv1.ConditionTrue
	s.Valid.Reason = "Valid"
	s.Valid.Message = "Valid HTTPProxy"
	s.Valid.ObservedGeneration = p.Generation
	return s
}

// Statuses returns the statuses as the objects carry them, in the order
// given: one allocation for all, since a Gateway may serve many.
func Statuses(s []*Status) []contourv1.HTTPProxyStatus {
	out := make([]contourv1.HTTPProxyStatus, len(s))
	conds := make([]contourv1.DetailedCondition, len(s))
	for i, st := range s {
		out[i] = st.into(conds[i : i+1 : i+1])
	}
	return out
}

// Invalid is the status of a proxy with one error.
func Invalid(p *contourv1.HTTPProxy, typ, reason, message string) *Status {
	s := newStatus(p)
	s.Valid.AddError(typ, reason, message)
	return s
}

// Orphaned is the status of a proxy no root includes.
func Orphaned(p *contourv1.HTTPProxy) *Status {
	s := newStatus(p)
	s.Valid.AddError(contourv1.ConditionTypeOrphanedError, "Orphaned", "this HTTPProxy is not part of a delegation chain from a root HTTPProxy")
	return s
}

// HTTPProxyStatus is the status as the object carries it.
func (s *Status) HTTPProxyStatus() contourv1.HTTPProxyStatus {
	return s.into(make([]contourv1.DetailedCondition, 1))
}

// into is HTTPProxyStatus with the conditions in conds, of length 1.
func (s *Status) into(conds []contourv1.DetailedCondition) contourv1.HTTPProxyStatus {
	conds[0] = s.Valid
	out := contourv1.HTTPProxyStatus{CurrentStatus: StatusValid, Description: s.Valid.Message, Conditions: conds}
	if s.Valid.Status != contourv1.ConditionTrue {
		out.CurrentStatus = StatusInvalid
		if o, ok := s.Valid.GetError(contourv1.ConditionTypeOrphanedError); ok {
			out.CurrentStatus, out.Description = StatusOrphaned, o.Message
		}
	}
	return out
}

// Duplicates returns, for every FQDN that more than one root serves, the
// status of each of those roots: Contour serves neither.
func Duplicates(roots []*contourv1.HTTPProxy) map[types.NamespacedName]*Status {
	by := map[string][]*contourv1.HTTPProxy{}
	for _, r := range roots {
		by[r.Spec.VirtualHost.Fqdn] = append(by[r.Spec.VirtualHost.Fqdn], r)
	}
	out := map[types.NamespacedName]*Status{}
	for fqdn, rs := range by {
		if len(rs) < 2 {
			continue
		}
		slices.SortFunc(rs, func(a, b *contourv1.HTTPProxy) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		var names []string
		for _, r := range rs {
			names = append(names, r.Namespace+"/"+r.Name)
		}
		for _, r := range rs {
			s := newStatus(r)
			s.Valid.AddErrorf(contourv1.ConditionTypeVirtualHostError, "DuplicateVhost", "fqdn %q is used in multiple HTTPProxies: %s", fqdn, strings.Join(names, ", "))
			out[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}] = s
		}
	}
	return out
}
