// Package xdscheck checks generated Envoy resources the way Envoy would on
// receipt, as far as can be done without Envoy: every message passes its
// protoc-gen-validate rules (ValidateAll), including the messages packed in
// Any fields, which ValidateAll does not open; the checks Envoy makes on load
// beyond those (package envoyrules); and every name one resource
// refers to (RDS route configurations, clusters, EDS assignments, SDS
// secrets) exists, and go-control-plane finds the set consistent.
package xdscheck

import (
	"errors"
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	// Register the extension types that Any fields may hold.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"

	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"isobar.dev/controller/pkg/envoyrules"
	"isobar.dev/controller/pkg/xds"
)

type validator interface{ ValidateAll() error }

// Validate runs ValidateAll on m and on every message packed in an Any
// below it, at any depth.
func Validate(m proto.Message) error {
	var errs []error
	walk(m.ProtoReflect(), func(msg protoreflect.Message) {
		if v, ok := msg.Interface().(validator); ok {
			if err := v.ValidateAll(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", msg.Descriptor().FullName(), err))
			}
		}
	}, &errs)
	return errors.Join(errs...)
}

// walk calls visit on m and on every Any-packed message below it. m's own
// ValidateAll covers its ordinary sub-messages, so only unpacked Anys are
// visited besides it.
func walk(m protoreflect.Message, visit func(protoreflect.Message), errs *[]error) {
	visit(m)
	descend(m, visit, errs)
}

// descend finds the Any fields below m.
func descend(m protoreflect.Message, visit func(protoreflect.Message), errs *[]error) {
	sub := func(sm protoreflect.Message) {
		a, ok := sm.Interface().(*anypb.Any)
		if !ok {
			descend(sm, visit, errs)
			return
		}
		unpacked, err := a.UnmarshalNew()
		if err != nil {
			*errs = append(*errs, fmt.Errorf("unpacking %s: %w", a.GetTypeUrl(), err))
			return
		}
		walk(unpacked.ProtoReflect(), visit, errs)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			if fd.Message() != nil {
				for i := 0; i < v.List().Len(); i++ {
					sub(v.List().Get(i).Message())
				}
			}
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					sub(mv.Message())
					return true
				})
			}
		case fd.Message() != nil:
			sub(v.Message())
		}
		return true
	})
}

// Resource checks one resource as Envoy does when it arrives, before it
// looks at any other: its protoc-gen-validate rules (Validate) and, for
// listeners, route configurations and clusters, Envoy's load-time rules. An error is
// what Envoy NACKs the response with.
func Resource(m proto.Message) error {
	errs := []error{Validate(m)}
	switch x := m.(type) {
	case *listenerv3.Listener:
		errs = append(errs, envoyrules.Listener(x))
	case *routev3.RouteConfiguration:
		errs = append(errs, envoyrules.RouteConfiguration(x))
	case *clusterv3.Cluster:
		errs = append(errs, envoyrules.Cluster(x))
	}
	return errors.Join(errs...)
}

// Check validates every resource and every reference between them.
func Check(r *xds.Resources) error {
	var errs []error
	each := func(kind, name string, m proto.Message) {
		if err := Resource(m); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", kind, name, err))
		}
	}
	routes := map[string]bool{}
	clusters := map[string]*clusterv3.Cluster{}
	endpoints := map[string]bool{}
	secrets := map[string]bool{}
	for _, x := range r.Listeners {
		each("listener", x.Name, x)
	}
	for _, x := range r.Routes {
		each("route configuration", x.Name, x)
		routes[x.Name] = true
	}
	for _, x := range r.Clusters {
		each("cluster", x.Name, x)
		clusters[x.Name] = x
	}
	for _, x := range r.Endpoints {
		each("cluster load assignment", x.ClusterName, x)
		endpoints[x.ClusterName] = true
	}
	for _, x := range r.Secrets {
		each("secret", x.Name, x)
		secrets[x.Name] = true
	}
	for _, x := range r.Runtimes {
		each("runtime", x.Name, x)
	}
	for _, l := range r.Listeners {
		errs = append(errs, listenerRefs(l, routes, secrets)...)
		for _, c := range streamClusters(l) {
			if clusters[c] == nil {
				errs = append(errs, fmt.Errorf("listener %q: cluster %q does not exist", l.Name, c))
			}
		}
	}
	for _, rc := range r.Routes {
		errs = append(errs, routeRefs(rc, clusters)...)
	}
	for _, c := range r.Clusters {
		if c.GetType() == clusterv3.Cluster_EDS {
			name := c.GetEdsClusterConfig().GetServiceName()
			if name == "" {
				name = c.Name
			}
			if !endpoints[name] {
				errs = append(errs, fmt.Errorf("cluster %q: EDS assignment %q does not exist", c.Name, name))
			}
		}
	}
	if err := Consistent(r); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Consistent applies go-control-plane's own check of a snapshot: the
// route configurations and endpoint assignments are exactly those the
// listeners and clusters name, no more, no fewer.
func Consistent(r *xds.Resources) error {
	res := map[resourcev3.Type][]types.Resource{}
	for typ, ms := range r.ByType() {
		for _, m := range ms {
			res[typ] = append(res[typ], m)
		}
	}
	snap, err := cache.NewSnapshot("check", res)
	if err != nil {
		return fmt.Errorf("building a snapshot: %w", err)
	}
	if err := snap.Consistent(); err != nil {
		return fmt.Errorf("snapshot not consistent: %w", err)
	}
	return nil
}

func listenerRefs(l *listenerv3.Listener, routes, secrets map[string]bool) []error {
	var errs []error
	for _, fc := range l.FilterChains {
		for _, f := range fc.Filters {
			hcm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().MessageIs(hcm) {
				if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
					errs = append(errs, fmt.Errorf("listener %q: %w", l.Name, err))
					continue
				}
				if name := hcm.GetRds().GetRouteConfigName(); name != "" && !routes[name] {
					errs = append(errs, fmt.Errorf("listener %q: route configuration %q does not exist", l.Name, name))
				}
			}
		}
		if ts := fc.GetTransportSocket(); ts != nil {
			ctx := &tlsv3.DownstreamTlsContext{}
			if ts.GetTypedConfig().MessageIs(ctx) {
				if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
					errs = append(errs, fmt.Errorf("listener %q: %w", l.Name, err))
					continue
				}
				for _, sds := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
					if !secrets[sds.Name] {
						errs = append(errs, fmt.Errorf("listener %q: secret %q does not exist", l.Name, sds.Name))
					}
				}
			}
		}
	}
	return errs
}

func routeRefs(rc *routev3.RouteConfiguration, clusters map[string]*clusterv3.Cluster) []error {
	var errs []error
	for _, vh := range rc.VirtualHosts {
		for _, r := range vh.Routes {
			a := r.GetRoute()
			if a == nil {
				continue
			}
			names := []string{}
			if c := a.GetCluster(); c != "" {
				names = append(names, c)
			}
			for _, w := range a.GetWeightedClusters().GetClusters() {
				// The one cluster meant not to exist: its share gets the
				// route's 500.
				if w.Name == xds.UnresolvedBackendCluster && a.GetClusterNotFoundResponseCode() == routev3.RouteAction_INTERNAL_SERVER_ERROR {
					continue
				}
				names = append(names, w.Name)
			}
			for _, m := range a.GetRequestMirrorPolicies() {
				names = append(names, m.Cluster)
			}
			for _, n := range names {
				if clusters[n] == nil {
					errs = append(errs, fmt.Errorf("route configuration %q, route %q: cluster %q does not exist", rc.Name, r.Name, n))
				}
			}
		}
	}
	return errs
}

// streamClusters are the clusters a listener's TCP and UDP proxies use.
func streamClusters(l *listenerv3.Listener) []string {
	var out []string
	for _, fc := range l.FilterChains {
		for _, f := range fc.Filters {
			p := &tcpproxyv3.TcpProxy{}
			if f.GetTypedConfig().MessageIs(p) && f.GetTypedConfig().UnmarshalTo(p) == nil {
				if c := p.GetCluster(); c != "" {
					out = append(out, c)
				}
				for _, w := range p.GetWeightedClusters().GetClusters() {
					out = append(out, w.Name)
				}
			}
		}
	}
	for _, lf := range l.ListenerFilters {
		p := &udpproxyv3.UdpProxyConfig{}
		if lf.GetTypedConfig().MessageIs(p) && lf.GetTypedConfig().UnmarshalTo(p) == nil {
			route := &udpproxyv3.Route{}
			if a := p.GetMatcher().GetOnNoMatch().GetAction().GetTypedConfig(); a.MessageIs(route) && a.UnmarshalTo(route) == nil {
				out = append(out, route.Cluster)
			}
		}
	}
	return out
}
