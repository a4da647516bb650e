package dataplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"isobar.dev/e2e/harness"
)

// selfSigned is a certificate for name, signed by itself, in PEM.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// answering is a filter chain for server name name that terminates TLS
// with SDS secret name and answers every request with name.
func answering(t *testing.T, name string) *listenerv3.FilterChain {
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: name,
			VirtualHosts: []*routev3.VirtualHost{{Name: name, Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 200,
					Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: name}}}},
			}}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &routerv3.Router{})}}},
	}
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		AlpnProtocols:                  []string{"h2", "http/1.1"},
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: name}},
	}}
	return &listenerv3.FilterChain{
		Name:             name,
		FilterChainMatch: &listenerv3.FilterChainMatch{ServerNames: []string{name}},
		Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(t, hcm)}}},
		TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: typed(t, ctx)}},
	}
}

// A TLS listener chooses its filter chain by the SNI of the real
// ClientHello and presents that chain's certificate; a server name no
// chain has gets its connection closed.
func TestTLSFilterChainBySNI(t *testing.T) {
	port := harness.FreePort(t)
	roots := x509.NewCertPool()
	var secrets []*tlsv3.Secret
	l := &listenerv3.Listener{
		Name:            "tls",
		Address:         &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}},
		ListenerFilters: []*listenerv3.ListenerFilter{{Name: "envoy.filters.listener.tls_inspector", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(t, &tlsinspectorv3.TlsInspector{})}}},
	}
	for _, name := range []string{"a.example", "b.example"} {
		cert, key := selfSigned(t, name)
		roots.AppendCertsFromPEM(cert)
		l.FilterChains = append(l.FilterChains, answering(t, name))
		secrets = append(secrets, &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: key}},
		}}})
	}
	staticEnvoy(t, l, secrets[0], secrets[1])
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for _, name := range []string{"a.example", "b.example"} {
		client := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{ServerName: name, RootCAs: roots}}}
		var resp *http.Response
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if resp, err = client.Get("https://" + addr + "/"); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("SNI %s: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != name || resp.TLS.PeerCertificates[0].Subject.CommonName != name || resp.ProtoMajor != 2 {
			t.Errorf("SNI %s: answer %q, certificate %q, %s; want %[1]s's chain, certificate and HTTP/2 (ALPN)", name, body, resp.TLS.PeerCertificates[0].Subject.CommonName, resp.Proto)
		}
	}
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "c.example", InsecureSkipVerify: true})
	if err == nil {
		c.Close()
		t.Errorf("SNI c.example: the handshake succeeded; no filter chain has that name")
	}
}

// A TLS listener agrees only to the key exchange groups of its
// ecdh_curves: a client offering none of them cannot connect, one that
// offers one of them can.
func TestTLSKeyExchangeGroups(t *testing.T) {
	port := harness.FreePort(t)
	const name = "p384.example"
	cert, key := selfSigned(t, name)
	chain := answering(t, name)
	chain.TransportSocket.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: typed(t, &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams:                      &tlsv3.TlsParameters{EcdhCurves: []string{"P-384"}},
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: name}},
	}})}
	l := &listenerv3.Listener{
		Name:            "tls",
		Address:         &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}},
		ListenerFilters: []*listenerv3.ListenerFilter{{Name: "envoy.filters.listener.tls_inspector", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(t, &tlsinspectorv3.TlsInspector{})}}},
		FilterChains:    []*listenerv3.FilterChain{chain},
	}
	staticEnvoy(t, l, &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: key}},
	}}})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dial := func(groups ...tls.CurveID) error {
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true, CurvePreferences: groups})
		if err == nil {
			c.Close()
		}
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); dial(tls.CurveP384) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a client offering P-384: %v", dial(tls.CurveP384))
		}
	}
	for _, groups := range [][]tls.CurveID{{tls.X25519}, {tls.X25519, tls.CurveP256}} {
		if err := dial(groups...); err == nil {
			t.Errorf("a client offering %v connected to a listener agreeing to P-384 alone", groups)
		}
	}
	if err := dial(tls.X25519, tls.CurveP384); err != nil {
		t.Errorf("a client offering X25519 and P-384: %v", err)
	}
}
