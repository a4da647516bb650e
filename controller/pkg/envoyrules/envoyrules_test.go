package envoyrules

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func add(name string) []*corev3.HeaderValueOption {
	return []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: name, Value: "v"}}}
}

func TestRouteConfiguration(t *testing.T) {
	route := func(r *routev3.Route) *routev3.RouteConfiguration {
		return &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"a.example.com"}, Routes: []*routev3.Route{r}}}}
	}
	weighted := func(c *routev3.WeightedCluster_ClusterWeight) *routev3.Route {
		return &routev3.Route{Name: "r", Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
			WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{c}}}}}}
	}
	for _, tc := range []struct {
		name string
		rc   *routev3.RouteConfiguration
		want string // "" for valid
	}{
		{"plain headers", route(&routev3.Route{Name: "r", RequestHeadersToAdd: add("x-a"), ResponseHeadersToRemove: []string{"x-b"}}), ""},
		{"set host on a route", route(&routev3.Route{Name: "r", RequestHeadersToAdd: add("Host")}), `header "Host" may not be modified`},
		{"remove host on a route", route(&routev3.Route{Name: "r", RequestHeadersToRemove: []string{"host"}}), `header "host" may not be removed`},
		{"pseudo-header on a response", route(&routev3.Route{Name: "r", ResponseHeadersToAdd: add(":status")}), `header ":status" may not be modified`},
		{"host on a weighted cluster", route(weighted(&routev3.WeightedCluster_ClusterWeight{Name: "c", Weight: wrapperspb.UInt32(1), RequestHeadersToAdd: add("host")})), "weighted cluster c"},
		{"host on a virtual host", &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"*"}, RequestHeadersToRemove: []string{":path"}}}}, "virtual host vh"},
		{"host on the configuration", &routev3.RouteConfiguration{Name: "rc", ResponseHeadersToAdd: add("HOST")}, "route configuration rc"},
		{"duplicate domains", &routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{{Name: "one", Domains: []string{"a.example.com"}}, {Name: "two", Domains: []string{"A.example.com"}}}},
			"also in virtual host one"},
		{"bad regex", route(&routev3.Route{Name: "r", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/(unclosed"}}}}), "does not compile"},
		{"good regex", route(&routev3.Route{Name: "r", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/v[0-9]+/.*"}}}}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := RouteConfiguration(tc.rc)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestListener(t *testing.T) {
	chain := func(name string, sni ...string) *listenerv3.FilterChain {
		return &listenerv3.FilterChain{Name: name, FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: sni}}
	}
	if err := Listener(&listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("a", "a.example.com"), chain("b", "b.example.com")}}); err != nil {
		t.Errorf("distinct matches refused: %v", err)
	}
	err := Listener(&listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("a", "a.example.com"), chain("b", "a.example.com")}})
	if err == nil || !strings.Contains(err.Error(), `filter chains "a" and "b" have the same match`) {
		t.Errorf("error %v, want the same match refused", err)
	}
}

// A CA or revocation list that does not load makes Envoy refuse the
// listener or cluster that verifies with it.
func TestCAsLoad(t *testing.T) {
	validation := func(ca, crl string) *tlsv3.CommonTlsContext {
		vc := &tlsv3.CertificateValidationContext{TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: ca}}}
		if crl != "" {
			vc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: crl}}
		}
		return &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}}
	}
	listener := func(ctx *tlsv3.CommonTlsContext) error {
		ts := &corev3.TransportSocket{Name: "tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: ctx})}}
		return Listener(&listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{{TransportSocket: ts}}})
	}
	cluster := func(ctx *tlsv3.CommonTlsContext) error {
		ts := &corev3.TransportSocket{Name: "tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: ctx})}}
		return Cluster(&clusterv3.Cluster{Name: "c", TransportSocket: ts})
	}
	for _, tc := range []struct {
		what    string
		err     error
		refused bool
	}{
		{"listener, a CA that is no certificate", listener(validation("not a certificate", "")), true},
		{"listener, a CRL that is no list", listener(validation(testCA, "not a list")), true},
		{"listener, a CA that loads", listener(validation(testCA, "")), false},
		{"cluster, a CA that is no certificate", cluster(validation("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "")), true},
		{"cluster, a CA that loads", cluster(validation(testCA, "")), false},
	} {
		if (tc.err != nil) != tc.refused {
			t.Errorf("%s: error %v, want refused: %t", tc.what, tc.err, tc.refused)
		}
	}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testCA is a self-signed certificate, in PEM.
var testCA = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}()
