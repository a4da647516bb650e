package dataplane

import (
	"bufio"
	"crypto/md5" //nolint:gosec // JA3 is defined as an MD5
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/e2e/harness"
)

// expectedFingerprints are the JA3 and JA4 of the ClientHello cfg makes,
// computed from what Go's own TLS server parses of it: a reading of the
// ClientHello independent of the simulator's.
func expectedFingerprints(t *testing.T, cfg *tls.Config) (ja3, ja4 string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan *tls.ClientHelloInfo, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			got <- h
			return nil, errors.New("seen")
		}}).Handshake()
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), cfg.Clone())
	if err == nil {
		c.Close()
	}
	h := <-got
	dec := func(vs []uint16) string {
		var parts []string
		for _, v := range vs {
			parts = append(parts, strconv.Itoa(int(v)))
		}
		return strings.Join(parts, "-")
	}
	var curves, points []uint16
	for _, c := range h.SupportedCurves {
		curves = append(curves, uint16(c))
	}
	for _, p := range h.SupportedPoints {
		points = append(points, uint16(p))
	}
	// Go's client sends TLS 1.2 as the legacy version, and no GREASE.
	sum := md5.Sum([]byte(fmt.Sprintf("771,%s,%s,%s,%s", dec(h.CipherSuites), dec(h.Extensions), dec(curves), dec(points)))) //nolint:gosec
	ja3 = hex.EncodeToString(sum[:])

	hexList := func(vs []uint16) string {
		var parts []string
		for _, v := range vs {
			parts = append(parts, fmt.Sprintf("%04x", v))
		}
		return strings.Join(parts, ",")
	}
	trunc := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:])[:12] }
	exts := slices.DeleteFunc(slices.Clone(h.Extensions), func(e uint16) bool { return e == 0 || e == 16 })
	slices.Sort(exts)
	var sigs []uint16
	for _, s := range h.SignatureSchemes {
		sigs = append(sigs, uint16(s))
	}
	alpn := h.SupportedProtos[0]
	sni := "i"
	if h.ServerName != "" {
		sni = "d"
	}
	ja4 = fmt.Sprintf("t13%s%02d%02d%c%c_%s_%s", sni, len(h.CipherSuites), len(h.Extensions), alpn[0], alpn[len(alpn)-1],
		trunc(hexList(slices.Sorted(slices.Values(h.CipherSuites)))), trunc(hexList(exts)+"_"+hexList(sigs)))
	return ja3, ja4
}

// A TLS listener whose inspector fingerprints ClientHellos fills
// %TLS_JA3_FINGERPRINT% and %TLS_JA4_FINGERPRINT% with the client's; one
// whose inspector does not leaves them empty, and the headers out.
func TestTLSFingerprintHeaders(t *testing.T) {
	cert, key := selfSigned(t, "a.example")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cert)
	secret := &tlsv3.Secret{Name: "a.example", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: key}},
	}}}
	listener := func(name string, port int, fingerprint bool) *listenerv3.Listener {
		chain := answering(t, "a.example")
		hcm := &hcmv3.HttpConnectionManager{}
		if err := chain.Filters[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
			t.Fatal(err)
		}
		rt := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0]
		for _, h := range [][2]string{{"x-ja3", "%TLS_JA3_FINGERPRINT%"}, {"x-ja4", "%TLS_JA4_FINGERPRINT%"}} {
			rt.ResponseHeadersToAdd = append(rt.ResponseHeadersToAdd, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: h[0], Value: h[1]}})
		}
		chain.Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: typed(t, hcm)}
		inspector := &tlsinspectorv3.TlsInspector{}
		if fingerprint {
			inspector.EnableJa3Fingerprinting, inspector.EnableJa4Fingerprinting = wrapperspb.Bool(true), wrapperspb.Bool(true)
		}
		return &listenerv3.Listener{
			Name:            name,
			Address:         &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)}}}},
			ListenerFilters: []*listenerv3.ListenerFilter{{Name: "envoy.filters.listener.tls_inspector", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(t, inspector)}}},
			FilterChains:    []*listenerv3.FilterChain{chain},
		}
	}
	on, off := harness.FreePort(t), harness.FreePort(t)
	staticEnvoy(t, listener("fingerprinted", on, true), listener("plain", off, false), secret)
	cfg := &tls.Config{ServerName: "a.example", RootCAs: roots, NextProtos: []string{"http/1.1"}}
	ja3, ja4 := expectedFingerprints(t, cfg)

	for _, tc := range []struct {
		port     int
		ja3, ja4 string
	}{{on, ja3, ja4}, {off, "", ""}} {
		var resp *http.Response
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			c, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(tc.port)), cfg.Clone())
			if err == nil {
				_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n"))
				resp, err = http.ReadResponse(bufio.NewReader(c), nil)
				c.Close()
			}
			if err == nil || time.Now().After(deadline) {
				if err != nil {
					t.Fatalf("port %d: %v", tc.port, err)
				}
				break
			}
		}
		resp.Body.Close()
		if got := resp.Header.Get("x-ja3"); got != tc.ja3 {
			t.Errorf("port %d: x-ja3 %q, want %q", tc.port, got, tc.ja3)
		}
		if got := resp.Header.Get("x-ja4"); got != tc.ja4 {
			t.Errorf("port %d: x-ja4 %q, want %q", tc.port, got, tc.ja4)
		}
	}
}
