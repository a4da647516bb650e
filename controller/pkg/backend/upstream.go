package backend

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
)

// Ref is a weighted backendRef of an HTTP route of any API, with the way
// its Service is spoken to.
type Ref struct {
	gatewayv1.HTTPBackendRef
	Upstream Upstream
	// RequestHeaders and ResponseHeaders change the headers of this
	// backend's share of requests; a Backend has them or header filters,
	// not both (the filters would be merged into them).
	RequestHeaders, ResponseHeaders *ir.HeaderModifier
	// CookieRewrites change the cookies the backend sets.
	CookieRewrites []ir.CookieRewrite
	// Hostname rewrites the host of this backend's share of requests.
	Hostname string
}

// Upstream is how a route speaks to its backend when it says so itself,
// as an HTTPProxy service's protocol does; the zero value speaks as the
// Service's port declares (its appProtocol, and a BackendTLSPolicy). It
// is comparable, a part of the cluster's identity.
type Upstream struct {
	// Protocol is Contour's: "h2c" (HTTP/2 in cleartext), "h2" (HTTP/2
	// over TLS) or "tls" (HTTP/1.1 over TLS).
	Protocol string
	// SNI is the server name asked of a TLS backend; "" sends none.
	SNI string
	// CA is the Secret whose ca.crt verifies a TLS backend's certificate,
	// for the names in SubjectNames (comma separated); without one Envoy
	// accepts any certificate, as Contour's does.
	CA           *corev1.Secret
	SubjectNames string
	// IdleConnection closes connections to the backend idle that long
	// (negative: never); 0 is Envoy's default.
	IdleConnection time.Duration
	// ExternalName is the host of an ExternalName Service, which Envoy
	// resolves, where the route may use one.
	ExternalName string
	// DNSFamily is which of ExternalName's addresses Envoy uses: "" for
	// Envoy's default, "v4" or "v6".
	DNSFamily string
	// LoadBalancer is the cluster's load balancing policy.
	LoadBalancer ir.LoadBalancer
	// HealthCheck is how Envoy checks the endpoints; interned (see
	// Names.HealthCheck), so that equal checks are one pointer.
	HealthCheck *ir.HealthCheck
	// SlowStart ramps new endpoints up.
	SlowStart ir.SlowStart
	// HealthPort is the Service port health checks go to, when not the
	// backend's (0).
	HealthPort int32
	// CircuitBreakers, when set, are the cluster's limits in place of the
	// Service's annotations' (an ExtensionService's circuitBreakerPolicy).
	CircuitBreakers ir.CircuitBreakers
}

// suffix sets the cluster of an Upstream apart from the Service port's
// own: "/<protocol>", then what it verifies and asks for.
func (u Upstream) suffix() string {
	var s string
	if u.Protocol != "" {
		s += "/" + u.Protocol
	}
	if u.CA != nil {
		s += "/ca=" + u.CA.Namespace + "/" + u.CA.Name + "/san=" + u.SubjectNames
	}
	if u.SNI != "" {
		s += "/sni=" + u.SNI
	}
	if u.IdleConnection != 0 {
		s += "/idle=" + u.IdleConnection.String()
	}
	if u.ExternalName != "" {
		s += "/dns=" + u.ExternalName
	}
	if u.DNSFamily != "" {
		s += "/family=" + u.DNSFamily
	}
	if u.LoadBalancer != "" {
		s += "/lb=" + string(u.LoadBalancer)
	}
	if u.HealthCheck != nil {
		s += "/hc=" + u.HealthCheck.Key()
	}
	if u.HealthPort != 0 {
		s += "/healthport=" + strconv.Itoa(int(u.HealthPort))
	}
	if u.SlowStart.Window > 0 {
		s += "/slowstart=" + u.SlowStart.Window.String() + "," + strconv.FormatFloat(u.SlowStart.Aggression, 'g', -1, 64) + "," + strconv.Itoa(int(u.SlowStart.MinWeightPercent))
	}
	if cb := u.CircuitBreakers; cb != (ir.CircuitBreakers{}) {
		s += fmt.Sprintf("/cb=%d,%d,%d,%d,%d", cb.MaxConnections, cb.MaxPendingRequests, cb.MaxRequests, cb.MaxRetries, cb.PerHostMaxConnections)
	}
	return s
}

// Apply makes c, the cluster of a Service's port, speak u's protocol,
// over u's TLS, with u's connection idle timeout; for an ExternalName
// Service, to its external name on that port.
func (u Upstream) Apply(c *ir.Cluster, port int32) {
	c.IdleTimeout, c.LoadBalancer, c.HealthCheck, c.SlowStart = u.IdleConnection, u.LoadBalancer, u.HealthCheck, u.SlowStart
	if u.CircuitBreakers != (ir.CircuitBreakers{}) {
		c.CircuitBreakers = u.CircuitBreakers
	}
	if u.ExternalName != "" {
		c.DNS, c.DNSFamily, c.Endpoints = true, u.DNSFamily, []ir.Endpoint{{Address: u.ExternalName, Port: uint32(port)}}
	}
	if u.Protocol == "" {
		return
	}
	c.HTTP2 = u.Protocol != "tls"
	if u.Protocol == "h2c" {
		return
	}
	c.TLS = &ir.UpstreamTLS{SNI: u.SNI, Unverified: u.CA == nil}
	if u.CA != nil {
		c.TLS.CA = u.CA.Data[CACertKey]
		for n := range strings.SplitSeq(u.SubjectNames, ",") {
			c.TLS.SubjectAltNames = append(c.TLS.SubjectAltNames, ir.SubjectAltName{Type: "DNS", Value: n})
		}
	}
}

// CACertKey is the key of a CA Secret's bundle, as Contour reads it.
const CACertKey = "ca.crt"
