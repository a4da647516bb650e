package httpproxy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
)

// tcpProxy is where a root's tcpproxy sends the connections of its TLS
// virtual host, terminated or passed through: its services, weighted
// (equally when no weight is given), or those of the tcpproxy of the
// proxy it includes, down a chain of includes. A service that does not
// resolve is an error, as in Contour; a problem of an included proxy is
// on its status, and the root's says its tcpproxy cannot be served.
func (w *walk) tcpProxy(root *contourv1.HTTPProxy) (*ir.Destination, *problem) {
	var visited []*contourv1.HTTPProxy
	for p := root; ; {
		d, next, bad := w.tcpProxyOf(p, visited)
		switch {
		case bad != nil && p == root:
			return nil, bad
		case bad != nil:
			w.status(p).Valid.AddError(bad.Type, bad.Reason, bad.Message)
			return nil, refused(contourv1.ConditionTypeTCPProxyIncludeError, "IncludeNotValid",
				fmt.Sprintf("the tcpproxy included from %s/%s cannot be served", p.Namespace, p.Name))
		case next == nil:
			return d, nil
		}
		visited = append(visited, p)
		p = next
	}
}

// tcpProxyOf is the destination of proxy p's tcpproxy, or the proxy it
// includes; visited are the proxies that included p.
func (w *walk) tcpProxyOf(p *contourv1.HTTPProxy, visited []*contourv1.HTTPProxy) (*ir.Destination, *contourv1.HTTPProxy, *problem) {
	tp := p.Spec.TCPProxy
	w.status(p) // reached: not orphaned
	if tp == nil {
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyIncludeError, "NothingDefined", "the included proxy has no tcpproxy")
	}
	if f := refuseTCPProxy(tp); f != "" {
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyError, "NotSupported", fmt.Sprintf("tcpproxy.%s is not supported yet", f))
	}
	inc := tp.Include
	if inc == nil {
		inc = tp.IncludesDeprecated
	}
	switch {
	case len(tp.Services) > 0 && inc != nil:
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyError, "NoServicesAndInclude", "cannot specify services and include in the same httpproxy")
	case len(tp.Services) > 0:
		d, bad := w.tcpServices(p)
		return d, nil, bad
	case inc == nil:
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyError, "NothingDefined", "either services or inclusion must be specified")
	}
	ns := inc.Namespace
	if ns == "" {
		ns = p.Namespace
	}
	child, ok := w.e.HTTPProxy(ns, inc.Name)
	switch {
	case !ok:
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyIncludeError, "IncludeNotFound", fmt.Sprintf("include %s/%s not found", ns, inc.Name))
	case w.opts.Serves != nil && !w.opts.Serves(child):
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyIncludeError, "IncludeNotFound", fmt.Sprintf("include %s/%s %s", ns, inc.Name, notServed(child)))
	case child.Spec.VirtualHost != nil:
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyIncludeError, "RootIncludesRoot", fmt.Sprintf("root httpproxy cannot include another root httpproxy (%s/%s)", ns, inc.Name))
	case child == p || slices.Contains(visited, child):
		var path []string
		for _, v := range append(visited, p, child) {
			path = append(path, v.Namespace+"/"+v.Name)
		}
		return nil, nil, refused(contourv1.ConditionTypeTCPProxyIncludeError, "IncludeCreatesCycle", "include creates a cycle: "+strings.Join(path, " -> "))
	}
	return nil, child, nil
}

// tcpServices resolves the services of p's tcpproxy, each spoken to
// over TLS when its protocol is tls (verified as its validation says), as
// Contour does.
func (w *walk) tcpServices(p *contourv1.HTTPProxy) (*ir.Destination, *problem) {
	tp := p.Spec.TCPProxy
	weighted := false
	for _, s := range tp.Services {
		weighted = weighted || s.Weight > 0
	}
	up, bad := w.tcpUpstream(p)
	if bad != nil {
		return nil, bad
	}
	out := &ir.Destination{}
	for j := range tp.Services {
		s := &tp.Services[j]
		if f := refuseTCPService(s); f != "" {
			return nil, refused(contourv1.ConditionTypeTCPProxyError, "NotSupported", fmt.Sprintf("tcpproxy.services[%d].%s is not supported yet", j, f))
		}
		for _, f := range requestFields(s) {
			w.status(p).Valid.AddWarningf(contourv1.ConditionTypeTCPProxyError, "IgnoredField",
				"tcpproxy.services[%d].%s is ignored: a forwarded connection has no requests", j, f)
		}
		if s.Port < 1 || s.Port > 65535 {
			return nil, refused(contourv1.ConditionTypeTCPProxyError, "ServicePortInvalid", fmt.Sprintf("service %q: port must be in the range 1-65535", s.Name))
		}
		weight := int32(1)
		if weighted {
			weight = int32(min(s.Weight, 1000000))
		}
		sup, bad := w.tcpServiceUpstream(p, j, s, up)
		if bad != nil {
			return nil, bad
		}
		if sup.SlowStart, bad = slowStart(s.SlowStartPolicy, up.LoadBalancer); bad != nil {
			return nil, bad
		}
		if sup.HealthPort, bad = w.healthPort(p, "Spec.TCPProxy", fmt.Sprintf("tcpproxy.services[%d]", j), s, up.HealthCheck != nil); bad != nil {
			return nil, bad
		}
		ref := gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(s.Name), Port: ptr(gatewayv1.PortNumber(s.Port))},
			Weight:                 &weight,
		}
		b := backend.ForStream(w.e, w.names, "HTTPProxy", p.Namespace, []gatewayv1.BackendRef{ref}, sup)
		if c := b.Unresolved; c != nil {
			return nil, refused(contourv1.ConditionTypeTCPProxyError, "ServiceUnresolvedReference", "Spec.TCPProxy unresolved service reference: "+c.Message)
		}
		w.tree.Clusters = append(w.tree.Clusters, b.Clusters...)
		out.Backends = append(out.Backends, b.Destination.Backends...)
	}
	return out, nil
}

// connectionless are the fields of a service that need requests: a
// tcpproxy's services take no effect with them, and Contour serves the
// proxy regardless, so Isobar does too, with a warning.
var connectionless = []string{"mirror", "requestHeadersPolicy", "responseHeadersPolicy", "cookieRewritePolicies"}

// requestFields are the connectionless fields s sets.
func requestFields(s *contourv1.Service) []string {
	var out []string
	for i, set := range []bool{s.Mirror, s.RequestHeadersPolicy != nil, s.ResponseHeadersPolicy != nil, len(s.CookieRewritePolicies) > 0} {
		if set {
			out = append(out, connectionless[i])
		}
	}
	return out
}

// tcpServiceUpstream is how service j of p's tcpproxy is spoken to: up,
// over TLS with protocol tls (the only one a connection can have besides
// plain TCP), verified against validation's CA for its subject names.
func (w *walk) tcpServiceUpstream(p *contourv1.HTTPProxy, j int, s *contourv1.Service, up backend.Upstream) (backend.Upstream, *problem) {
	if s.Protocol != nil && *s.Protocol != "" {
		if *s.Protocol != "tls" {
			return up, refused(contourv1.ConditionTypeTCPProxyError, "UnsupportedProtocol",
				fmt.Sprintf("tcpproxy.services[%d]: protocol %q is not tls: a forwarded connection speaks TCP, or TLS to the service", j, *s.Protocol))
		}
		up.Protocol = "tls"
	}
	if v := s.UpstreamValidation; v != nil {
		if up.Protocol != "tls" {
			w.status(p).Valid.AddWarningf(contourv1.ConditionTypeTCPProxyError, "ValidationHasNoEffect",
				"tcpproxy.services[%d]: validation takes effect only with protocol tls", j)
			return up, nil
		}
		from := refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: p.Namespace}
		ca, bad := w.caSecret(from, fmt.Sprintf("Service [%s:%d] ", s.Name, s.Port), v)
		if bad != nil {
			return up, bad
		}
		up.CA, up.SubjectNames = ca, strings.Join(cmpSubjectNames(v), ",")
	}
	return up, nil
}

// tcpUpstream is what a tcpproxy asks of its services' clusters: a load
// balancing strategy of those that pick a connection's endpoint without
// a request (RoundRobin, WeightedLeastRequest, Random; the others are
// refused), and a TCP health check with Contour's defaults.
func (w *walk) tcpUpstream(p *contourv1.HTTPProxy) (backend.Upstream, *problem) {
	tp := p.Spec.TCPProxy
	var up backend.Upstream
	if lb := tp.LoadBalancerPolicy; lb != nil {
		switch lb.Strategy {
		case "Cookie", "RequestHash":
			// Contour serves the proxy; there is no request to hash.
			w.status(p).Valid.AddWarningf(contourv1.ConditionTypeTCPProxyError, "IgnoredField",
				"tcpproxy.loadBalancerPolicy.strategy %s is ignored: a connection has no request to hash; connections are balanced round robin", lb.Strategy)
			return w.tcpHealth(p, up)
		}
		strategy, _, warnings := loadBalancer(lb)
		for _, msg := range warnings {
			w.status(p).Valid.AddWarning(contourv1.ConditionTypeTCPProxyError, "LoadBalancerPolicyIgnored", "tcpproxy: "+msg)
		}
		up.LoadBalancer = strategy
	}
	return w.tcpHealth(p, up)
}

// tcpHealth adds to up the TCP health check of p's tcpproxy, with
// Contour's defaults.
func (w *walk) tcpHealth(p *contourv1.HTTPProxy, up backend.Upstream) (backend.Upstream, *problem) {
	if hc := p.Spec.TCPProxy.HealthCheckPolicy; hc != nil {
		if hc.IntervalSeconds < 0 || hc.TimeoutSeconds < 0 {
			return up, refused(contourv1.ConditionTypeTCPProxyError, "HealthCheckPolicyInvalid", "tcpproxy.healthCheckPolicy: intervals and timeouts cannot be negative")
		}
		h := &ir.HealthCheck{Interval: healthCheckInterval, Timeout: healthCheckTimeout, Unhealthy: healthCheckUnhealthy, Healthy: healthCheckHealthy}
		if hc.IntervalSeconds > 0 {
			h.Interval = time.Duration(hc.IntervalSeconds) * time.Second
		}
		if hc.TimeoutSeconds > 0 {
			h.Timeout = time.Duration(hc.TimeoutSeconds) * time.Second
		}
		if hc.UnhealthyThresholdCount > 0 {
			h.Unhealthy = hc.UnhealthyThresholdCount
		}
		if hc.HealthyThresholdCount > 0 {
			h.Healthy = hc.HealthyThresholdCount
		}
		up.HealthCheck = w.names.HealthCheck(h)
	}
	return up, nil
}
