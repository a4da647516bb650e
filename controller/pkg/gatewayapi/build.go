package gatewayapi

import (
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/engine"
	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/listener"
)

// build assembles the IR. Every usable HTTP or HTTPS listener gets a
// virtual host for its own hostname even without routes, so that requests
// for it get a 404 there instead of reaching a less specific listener's
// routes.
func (t *gatewayTranslator) build(svc profileServices) *ir.Gateway {
	t.state.Prepare()
	for _, l := range t.listeners {
		if l.Usable() && l.Spec.Protocol == gatewayv1.TLSProtocolType && peerSet(l) != nil {
			// A processor's object's TLS host passed through: a chain
			// of its own once the object is attached.
			if tls := chainTLS(l); tls != nil && tls.TCP != nil {
				tb := t.table(l)
				tb.Listeners = append(tb.Listeners, engine.HTTPSListener{Hostname: l.Hostname, TLS: tls})
			}
			continue
		}
		if l.Usable() && l.Family == engine.FamilyHTTP || l.Usable() && l.Spec.Protocol == gatewayv1.HTTPSProtocolType {
			tb := t.table(l)
			tb.Host(hostname.OrAny(l.Hostname), l.Certificates)
			if l.Spec.Protocol == gatewayv1.HTTPSProtocolType {
				hl := engine.HTTPSListener{Hostname: l.Hostname, Certs: l.Certificates, TLS: chainTLS(l)}
				if hl.TLS != nil && hl.TLS.Fallback {
					tb.Fallback = t.fallbackCertificate(l)
				}
				tb.Listeners = append(tb.Listeners, hl)
			}
			// Validation is per port: every HTTPS listener of the port
			// has the same.
			if l.ClientValidation != nil {
				tb.Validation = l.ClientValidation
			}
		}
	}
	if t.names != nil {
		for _, l := range t.gw.Spec.Listeners {
			tb, ok := t.state.Tables()[engine.TableKey{Port: l.Port}]
			switch {
			case !ok:
			case tb.Family() == engine.FamilyHTTP:
				n := t.names.HTTP
				tb.Names = &n
			case tb.HTTPS():
				n := t.names.HTTPS
				tb.Names = &n
			}
		}
	}
	g := &ir.Gateway{Name: t.gw.Namespace + "/" + t.gw.Name, RateLimit: svc.rateLimit, Tracing: svc.tracing, ExtAuth: svc.extAuth}
	t.state.Build(g)
	g.ExtAuthHeaders = extAuthHeaders(g)
	for _, c := range t.clusters {
		g.Clusters = append(g.Clusters, c)
	}
	slices.SortFunc(g.Clusters, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range t.secrets {
		g.Secrets = append(g.Secrets, s)
	}
	slices.SortFunc(g.Secrets, func(a, b *ir.Secret) int { return strings.Compare(a.Name, b.Name) })
	return g
}

// fallbackCertificate resolves the fallback certificate of the
// processor's object of l, which checked that it may use it; "" when it
// cannot be resolved (the object's status says why).
func (t *gatewayTranslator) fallbackCertificate(l *listener.Listener) string {
	fb := peerSet(l).Fallback
	if fb == nil {
		return ""
	}
	ns := gatewayv1.Namespace(fb.Namespace)
	name, problem := t.validation().Certificate(gatewayv1.SecretObjectReference{Namespace: &ns, Name: gatewayv1.ObjectName(fb.Name)}, t.validation().OwnerOf(l))
	if problem != nil {
		return ""
	}
	return name
}

// chainTLS is what the processor's object of l, one of its TLS hosts'
// listeners, asks of the listener's chain.
func chainTLS(l *listener.Listener) *ir.ChainTLS {
	if s := peerSet(l); s != nil && s.ChainTLS != nil {
		return s.ChainTLS()
	}
	return nil
}

// table returns the engine's table of a listener's port.
func (t *gatewayTranslator) table(l *listener.Listener) *engine.Table {
	return t.state.Table(slotOf(l))
}

// slotOf is a listener as the engine's state knows it.
func slotOf(l *listener.Listener) engine.Listener {
	return engine.Listener{
		Key:           engine.TableKey{Port: l.Spec.Port, UDP: l.Family == engine.FamilyUDP},
		Family:        l.Family,
		ContainerPort: l.ContainerPort,
		HTTPS:         l.Spec.Protocol == gatewayv1.HTTPSProtocolType,
		Certificates:  l.Certificates,
	}
}

// extAuthHeaders are the distinct lists of allowed request headers of
// the external authorization checks of g's routes, sorted.
func extAuthHeaders(g *ir.Gateway) [][]string {
	var out [][]string
	add := func(t *ir.RouteTable) {
		if t == nil {
			return
		}
		for _, vh := range t.VirtualHosts {
			for _, r := range vh.Routes {
				if a := r.ExtAuth; a != nil && a.AllowedHeaders != nil && !slices.ContainsFunc(out, func(h []string) bool { return slices.Equal(h, a.AllowedHeaders) }) {
					out = append(out, a.AllowedHeaders)
				}
			}
		}
	}
	for _, l := range g.Listeners {
		add(l.HTTP)
		for _, c := range l.Chains {
			add(c.HTTP)
		}
	}
	slices.SortFunc(out, slices.Compare)
	return out
}
