package backend

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/ir"
)

// Names holds the cluster names of one translation: most backends of a
// large Gateway share a few clusters, and building a name anew for each
// reference costs an allocation. The zero value is ready to use; a nil
// *Names builds every name anew.
type Names struct {
	m            map[string]string
	upstreams    map[Upstream]*Upstream
	healthChecks map[string]*ir.HealthCheck
	shared       map[string]*Shares
}

// HealthCheck interns a health check, so that Upstreams with equal
// checks are equal.
func (n *Names) HealthCheck(h *ir.HealthCheck) *ir.HealthCheck {
	if n == nil || h == nil {
		return h
	}
	k := h.Key()
	if p, ok := n.healthChecks[k]; ok {
		return p
	}
	if n.healthChecks == nil {
		n.healthChecks = map[string]*ir.HealthCheck{}
	}
	n.healthChecks[k] = h
	return h
}

// upstream interns u: a ClusterSpec holds a pointer, which keeps it small
// for the many that have none, and equal Upstreams compare equal.
func (n *Names) upstream(u Upstream) *Upstream {
	if n == nil {
		return &u
	}
	if p, ok := n.upstreams[u]; ok {
		return p
	}
	if n.upstreams == nil {
		n.upstreams = map[Upstream]*Upstream{}
	}
	p := &u
	n.upstreams[u] = p
	return p
}

// cluster names the cluster of a Service's port,
// "<namespace>/<name>/<port>[/udp|/grpc]".
func (n *Names) cluster(ns, name string, port int32, suffix string) string {
	var buf [128]byte
	b := append(buf[:0], ns...)
	b = append(b, '/')
	b = append(b, name...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, suffix...)
	if n == nil {
		return string(b)
	}
	if s, ok := n.m[string(b)]; ok {
		return s
	}
	if n.m == nil {
		n.m = map[string]string{}
	}
	s := string(b)
	n.m[s] = s
	return s
}

// A ClusterSpec is what a cluster is built from: the engine keeps it with
// the rules that use it, and builds the cluster with each snapshot's
// endpoints.
type ClusterSpec struct {
	// Name is "<namespace>/<name>/<port>[/udp|/grpc]".
	Name     string
	Service  *corev1.Service
	Port     *corev1.ServicePort
	Protocol corev1.Protocol
	// GRPC says the cluster speaks HTTP/2 whatever the Service says.
	GRPC bool
	// TLS is the BackendTLSPolicy that applies to the Service port.
	TLS *backendtls.Policy
	// Rejected says the BackendTLSPolicy (or the XBackend) is unusable,
	// so there is no cluster, only its status to record.
	Rejected bool
	// XBackend, when set, is the external backend the cluster reaches,
	// in place of a Service.
	XBackend *ExternalBackend
	// Absent, with Rejected, is a Service a route names that does not
	// exist: no cluster, but the policies that target it report
	// TargetNotFound to the Gateway. A pointer keeps the many specs of
	// Services that exist small.
	Absent *types.NamespacedName
	// Upstream is how the route speaks to the Service, when it says;
	// interned, so that equal ones are one pointer.
	Upstream *Upstream
	// HostPort, for a cluster of no Service (Service nil), is the port of
	// Upstream.ExternalName, the host Envoy resolves.
	HostPort int32
	// Shares, for a cluster of no Service, makes it the endpoints of its
	// members' clusters, each a locality of its weight (interned).
	Shares *Shares
}

// Shares are the member clusters of a shared cluster, and their weights:
// Envoy's UDP proxy routes to one cluster, so a UDPRoute's weighted
// backends are one; an ExtensionService's weighted services too.
type Shares struct {
	Members []ir.WeightedCluster
}

// SharedCluster is the cluster of name made of members, which are
// clusters of their own too; members of weight 0 get nothing and are
// left out.
func SharedCluster(names *Names, name string, members []ir.WeightedCluster) ClusterSpec {
	var key strings.Builder
	var kept []ir.WeightedCluster
	for _, m := range members {
		if m.Weight > 0 {
			kept = append(kept, m)
			fmt.Fprintf(&key, "%s=%d,", m.Cluster, m.Weight)
		}
	}
	return ClusterSpec{Name: name, Shares: names.shares(key.String(), kept)}
}

func (n *Names) shares(key string, members []ir.WeightedCluster) *Shares {
	if n == nil {
		return &Shares{Members: members}
	}
	if p, ok := n.shared[key]; ok {
		return p
	}
	if n.shared == nil {
		n.shared = map[string]*Shares{}
	}
	p := &Shares{Members: members}
	n.shared[key] = p
	return p
}

// HostCluster is the cluster of a host Envoy resolves itself, at port,
// spoken to as up says (a JWKS URI's host and port): its name is
// "dns/<host>/<port>", then what sets up apart.
func HostCluster(names *Names, host string, port int32, up Upstream) ClusterSpec {
	up.ExternalName = host
	suffix := up.suffix()
	// The host is in the name already.
	suffix = strings.Replace(suffix, "/dns="+host, "", 1)
	return ClusterSpec{Name: "dns/" + host + "/" + strconv.Itoa(int(port)) + suffix, Upstream: names.upstream(up), HostPort: port}
}
