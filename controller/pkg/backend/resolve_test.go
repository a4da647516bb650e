package backend

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
)

// Resolving is a function of the refs and what the Env holds: which
// weighted clusters a request may go to, which shares answer 500 and why,
// and the cluster specs the engine keeps for them. HTTPProxy and Ingress
// call ForHTTP, the Gateway API's rules Weighted with their filters, the
// stream routes ForStream; each is checked here alone.
func TestResolve(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	e := env.NewIndex(&resources.Resources{Services: []*corev1.Service{svc}}, nil).Env(&env.Reads{})
	ref := func(name string, port, weight int32) Ref {
		return Ref{HTTPBackendRef: gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(port))},
			Weight:                 ptr.To(weight)}}}
	}
	withFilter := ref("web", 80, 1)
	withFilter.Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterURLRewrite}}
	for _, tc := range []struct {
		name         string
		resolve      func(*Names) (*ir.Destination, []string, []ClusterSpec)
		wantDest     string
		wantResolved []string
		wantClusters []string
	}{{
		name: "HTTP: a missing Service keeps its share, invalid",
		resolve: func(n *Names) (*ir.Destination, []string, []ClusterSpec) {
			b := ForHTTP(e, n, "HTTPProxy", "app", []Ref{ref("web", 80, 3), ref("gone", 80, 1)})
			return b.Destination, messages(b.Unresolved), b.Clusters
		},
		wantDest:     "app/web/80:3 invalid:1",
		wantResolved: []string{"BackendNotFound: Service app/gone does not exist"},
		wantClusters: []string{"app/web/80", "absent/app/gone"},
	}, {
		name: "HTTP: a filter where the API has none is refused",
		resolve: func(n *Names) (*ir.Destination, []string, []ClusterSpec) {
			b := ForHTTP(e, n, "Ingress", "app", []Ref{withFilter})
			return b.Destination, messages(b.Unresolved), b.Clusters
		},
		wantDest:     "invalid:1",
		wantResolved: []string{"UnsupportedValue: backendRef web: filters are not supported on a backend of a Ingress"},
		wantClusters: []string{"app/web/80"},
	}, {
		name: "Weighted: the rules' filters apply to the share",
		resolve: func(n *Names) (*ir.Destination, []string, []ClusterSpec) {
			r := NewResolver(e, n)
			d := r.Weighted("app", "HTTPRoute", []Ref{withFilter}, func(wc *ir.WeightedCluster, fs []gatewayv1.HTTPRouteFilter) error {
				wc.Hostname = string(fs[0].Type)
				return nil
			})
			return d, messages(r.Unresolved), r.Clusters
		},
		wantDest:     "app/web/80:1@URLRewrite",
		wantClusters: []string{"app/web/80"},
	}, {
		name: "Weighted: the port must be the Service's",
		resolve: func(n *Names) (*ir.Destination, []string, []ClusterSpec) {
			r := NewResolver(e, n)
			d := r.Weighted("app", "GRPCRoute", []Ref{ref("web", 81, 1)}, nil)
			return d, messages(r.Unresolved), r.Clusters
		},
		wantDest:     "invalid:1",
		wantResolved: []string{"BackendNotFound: Service app/web has no TCP port 81"},
	}, {
		name: "stream: a UDPRoute takes the UDP port, invalid refs are left out",
		resolve: func(n *Names) (*ir.Destination, []string, []ClusterSpec) {
			refs := []gatewayv1.BackendRef{ref("web", 53, 1).BackendRef, ref("web", 80, 1).BackendRef}
			b := ForStream(e, n, "UDPRoute", "app", refs, Upstream{})
			return b.Destination, messages(b.Unresolved), b.Clusters
		},
		wantDest:     "app/web/53/udp:1",
		wantResolved: []string{"BackendNotFound: Service app/web has no UDP port 80"},
		wantClusters: []string{"app/web/53/udp"},
	}, {
		name: "an Upstream sets its cluster apart",
		resolve: func(n *Names) (*ir.Destination, []string, []ClusterSpec) {
			r := NewResolver(e, n)
			a := ref("web", 80, 1)
			a.Upstream = Upstream{Protocol: "h2c"}
			d := r.Weighted("app", "HTTPProxy", []Ref{a, ref("web", 80, 1)}, nil)
			return d, messages(r.Unresolved), r.Clusters
		},
		wantDest:     "app/web/80/h2c:1 app/web/80:1",
		wantClusters: []string{"app/web/80/h2c", "app/web/80"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, names := range []*Names{nil, {}} {
				d, resolved, clusters := tc.resolve(names)
				if got := describe(d); got != tc.wantDest {
					t.Errorf("destination = %q, want %q", got, tc.wantDest)
				}
				if fmt.Sprint(resolved) != fmt.Sprint(tc.wantResolved) {
					t.Errorf("resolved = %q, want %q", resolved, tc.wantResolved)
				}
				var got []string
				for _, c := range clusters {
					got = append(got, c.Name)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.wantClusters) {
					t.Errorf("clusters = %q, want %q", got, tc.wantClusters)
				}
			}
		})
	}
}

// Names interns: equal clusters, upstreams and shares are one value, so
// that the engine's cluster specs compare equal when they are.
func TestNamesIntern(t *testing.T) {
	var n Names
	first, second := n.upstream(Upstream{Protocol: "h2", SNI: "x"}), n.upstream(Upstream{Protocol: "h2", SNI: "x"})
	if first != second {
		t.Error("equal Upstreams are two pointers")
	}
	a := SharedCluster(&n, "s", []ir.WeightedCluster{{Cluster: "a", Weight: 1}, {Cluster: "b", Weight: 0}})
	b := SharedCluster(&n, "s", []ir.WeightedCluster{{Cluster: "a", Weight: 1}})
	if a != b || len(a.Shares.Members) != 1 {
		t.Errorf("shared clusters %+v and %+v: want one value without the member of weight 0", a, b)
	}
	if h := HostCluster(&n, "jwks.example.com", 443, Upstream{Protocol: "tls"}); h.Name != "dns/jwks.example.com/443/tls" {
		t.Errorf("host cluster %q, want dns/jwks.example.com/443/tls", h.Name)
	}
}

func messages(p *condition.RouteProblem) []string {
	if p == nil {
		return nil
	}
	return []string{string(p.Reason) + ": " + p.Message}
}

func describe(d *ir.Destination) string {
	s := ""
	for i, b := range d.Backends {
		if i > 0 {
			s += " "
		}
		if b.Invalid {
			s += fmt.Sprintf("invalid:%d", b.Weight)
			continue
		}
		s += fmt.Sprintf("%s:%d", b.Cluster, b.Weight)
		if b.Hostname != "" {
			s += "@" + b.Hostname
		}
	}
	return s
}
