package envoysim

import (
	"crypto/tls"
	"errors"
	"fmt"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

const (
	tlsInspector          = "envoy.filters.listener.tls_inspector"
	proxyProtocolFilter   = "envoy.filters.listener.proxy_protocol"
	udpProxy              = "envoy.filters.udp_listener.udp_proxy"
	httpConnectionManager = "envoy.filters.network.http_connection_manager"
	tcpProxy              = "envoy.filters.network.tcp_proxy"
)

// listenerFieldsKnown are Listener fields that do not change which filter
// chain a connection gets or what it does.
var listenerFieldsKnown = []string{
	"name", "address", "filter_chains", "default_filter_chain", "listener_filters",
	"per_connection_buffer_limit_bytes", "drain_type", "listener_filters_timeout", "continue_on_listener_filters_timeout",
	"traffic_direction", "connection_balance_config", "enable_reuse_port", "socket_options", "metadata", "stat_prefix",
	"tcp_fast_open_queue_length", "bind_to_port", "freebind", "max_connections_to_accept_per_socket_event",
	"ignore_global_conn_limit", "access_log", "udp_listener_config",
}

// Connection is what Envoy makes of a new connection before any request
// on it: its listener and filter chain, the TLS it terminates, and the
// network filter that takes it.
type Connection struct {
	Listener    string
	FilterChain string
	Filter      string
	// TLS is set when the filter chain terminates TLS.
	TLS *DownstreamTLS
	// chain and filter are what Simulate goes on with.
	chain  *listenerv3.FilterChain
	filter *listenerv3.Filter
	// fingerprints are the client's, as the TLS inspector computed them.
	fingerprints fingerprints
}

// DownstreamTLS is how a filter chain terminates TLS.
type DownstreamTLS struct {
	// Certificates are the SDS secrets Envoy may present.
	Certificates []string
	// ALPN is what Envoy offers; none means it negotiates no protocol.
	ALPN []string
	// MinVersion and MaxVersion are crypto/tls versions (tls_params, or
	// Envoy's server defaults TLS 1.2 and 1.3).
	MinVersion, MaxVersion uint16
	// Curves are the key exchange groups Envoy agrees to (tls_params'
	// ecdh_curves, or Envoy's server defaults X25519 and P-256).
	Curves []tls.CurveID
	// ClientCertificate is "", "optional" or "required".
	ClientCertificate string
	validation        *clientValidation
}

// VerifyClient checks the chain (DER, leaf first; none when the client
// sent none) a client answers Envoy's certificate request with, as
// Envoy's handshake does.
func (t *DownstreamTLS) VerifyClient(chain [][]byte) error {
	if t.validation == nil {
		return nil
	}
	return t.validation.check(func() [][]byte { return chain })
}

// Connect answers which listener and filter chain take a connection (req's
// port, protocol, and TLS ClientHello), and how.
func (s *Simulator) Connect(req Request) (*Connection, error) {
	l, err := s.listener(req)
	if err != nil {
		return nil, err
	}
	c := &Connection{Listener: l.GetName()}
	if req.UDP {
		return c, nil
	}
	inspected, proxied := false, false
	for i, f := range l.GetListenerFilters() {
		switch f.GetName() {
		case tlsInspector:
			inspected = true
			if c.fingerprints, err = inspectorFingerprints(f, req); err != nil {
				return nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
			}
		case proxyProtocolFilter:
			if i != 0 {
				return nil, errUnsupportedf("listener %s: a PROXY protocol filter after another listener filter", l.GetName())
			}
			if err := proxyProtocolConfig(f); err != nil {
				return nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
			}
			proxied = true
		default:
			return nil, errUnsupportedf("listener %s: listener filter %s", l.GetName(), f.GetName())
		}
	}
	switch {
	case proxied && !req.ProxyProtocol:
		return nil, fmt.Errorf("listener %s expects a PROXY protocol header, and the connection has none: Envoy closes it", l.GetName())
	case !proxied && req.ProxyProtocol:
		return nil, fmt.Errorf("listener %s does not expect a PROXY protocol header: Envoy reads it as the connection's data and the connection fails", l.GetName())
	}
	m := connection{port: req.Port, transport: "raw_buffer"}
	// Only the TLS inspector tells Envoy a connection is TLS, and its SNI
	// and ALPN (listener_components.proto: FilterChainMatch).
	if inspected && req.TLS {
		m.transport, m.sni, m.alpn = "tls", strings.ToLower(req.SNI), req.ALPN
	}
	fc, name, err := selectFilterChain(l, m)
	if err != nil {
		return nil, err
	}
	c.FilterChain, c.chain = name, fc
	if err := understand(fc, "name", "filter_chain_match", "filters", "transport_socket", "metadata", "transport_socket_connect_timeout"); err != nil {
		return nil, err
	}
	if ts := fc.GetTransportSocket(); ts != nil {
		if c.TLS, err = s.downstreamTLS(ts); err != nil {
			return nil, fmt.Errorf("listener %s, filter chain %s: %w", l.GetName(), name, err)
		}
		if !req.TLS {
			return nil, fmt.Errorf("listener %s, filter chain %s terminates TLS, and the request is not TLS: the handshake fails", l.GetName(), name)
		}
	}
	filters := fc.GetFilters()
	if len(filters) != 1 {
		return nil, errUnsupportedf("listener %s, filter chain %s: %d network filters, the simulator follows exactly one", l.GetName(), name, len(filters))
	}
	f := filters[0]
	if err := understand(f, "name", "typed_config"); err != nil {
		return nil, err
	}
	c.Filter, c.filter = f.GetName(), f
	switch f.GetName() {
	case httpConnectionManager:
		if req.TLS && c.TLS == nil {
			return nil, fmt.Errorf("listener %s, filter chain %s: a TLS connection reaches an HTTP connection manager that does not terminate TLS", l.GetName(), name)
		}
	case tcpProxy:
	default:
		return nil, errUnsupportedf("network filter %s", f.GetName())
	}
	return c, nil
}

// Simulate answers what Envoy does with req.
func (s *Simulator) Simulate(req Request) (*Answer, error) {
	c, err := s.Connect(req)
	if err != nil {
		return nil, err
	}
	a := &Answer{Listener: c.Listener, FilterChain: c.FilterChain, Filter: c.Filter}
	req.fingerprints = c.fingerprints
	if req.UDP {
		l, _ := s.listener(req)
		return a, s.udp(l, a)
	}
	var peer [][]byte // the client's certificate chain, when Envoy asks
	if t := c.TLS; t != nil {
		a.DownstreamTLS, a.ClientCertificate = t.Certificates, t.ClientCertificate
		if t.validation != nil {
			if req.ClientCertificate != nil {
				peer = req.ClientCertificate()
			}
			if err := t.validation.check(func() [][]byte { return peer }); err != nil {
				return nil, fmt.Errorf("listener %s, filter chain %s: %w", c.Listener, c.FilterChain, err)
			}
		}
	}
	if c.Filter == httpConnectionManager {
		return a, s.http(c.filter, req, peer, a)
	}
	return a, s.tcpProxy(c.filter, req, a)
}

// listener is the one bound to the request's port and protocol.
func (s *Simulator) listener(req Request) (*listenerv3.Listener, error) {
	want := corev3.SocketAddress_TCP
	if req.UDP {
		want = corev3.SocketAddress_UDP
	}
	for _, l := range s.listeners {
		if err := understand(l, listenerFieldsKnown...); err != nil {
			return nil, err
		}
		sa := l.GetAddress().GetSocketAddress()
		if sa == nil {
			return nil, errUnsupportedf("listener %s: address is not a socket address", l.GetName())
		}
		if sa.GetPortValue() == req.Port && sa.GetProtocol() == want {
			return l, nil
		}
	}
	proto := "TCP"
	if req.UDP {
		proto = "UDP"
	}
	return nil, fmt.Errorf("%w on %s port %d: the connection is refused", ErrNoListener, proto, req.Port)
}

// ErrNoListener is the error of a request to a port no listener has.
var ErrNoListener = errors.New("no listener")

// connection is what filter chain matching sees of a connection.
type connection struct {
	port      uint32
	transport string
	sni       string
	alpn      []string
}

// selectFilterChain follows listener_components.proto (FilterChainMatch):
// criteria are applied in order (destination port, server names,
// transport protocol, application protocols); at each step only the chains
// that match most specifically go on. No chain left means the default
// filter chain, or a closed connection.
func selectFilterChain(l *listenerv3.Listener, c connection) (*listenerv3.FilterChain, string, error) {
	type candidate struct {
		fc   *listenerv3.FilterChain
		name string
	}
	var cands []candidate
	for i, fc := range l.GetFilterChains() {
		m := fc.GetFilterChainMatch()
		if err := understand(m, "destination_port", "server_names", "transport_protocol", "application_protocols"); err != nil {
			return nil, "", err
		}
		name := fc.GetName()
		if name == "" {
			name = "filter_chains[" + strconv.Itoa(i) + "]"
		}
		cands = append(cands, candidate{fc, name})
	}
	// keepBest keeps the candidates with the highest score; a negative
	// score removes a candidate.
	keepBest := func(score func(*listenerv3.FilterChainMatch) int) {
		best := -1
		for _, c := range cands {
			best = max(best, score(c.fc.GetFilterChainMatch()))
		}
		cands = slices.DeleteFunc(cands, func(c candidate) bool {
			s := score(c.fc.GetFilterChainMatch())
			return s < 0 || s < best
		})
	}
	keepBest(func(m *listenerv3.FilterChainMatch) int {
		switch {
		case m.GetDestinationPort() == nil:
			return 0
		case m.GetDestinationPort().GetValue() == c.port:
			return 1
		}
		return -1
	})
	keepBest(func(m *listenerv3.FilterChainMatch) int { return serverNameScore(m.GetServerNames(), c.sni) })
	keepBest(func(m *listenerv3.FilterChainMatch) int {
		switch m.GetTransportProtocol() {
		case "":
			return 0
		case c.transport:
			return 1
		}
		return -1
	})
	keepBest(func(m *listenerv3.FilterChainMatch) int {
		if len(m.GetApplicationProtocols()) == 0 {
			return 0
		}
		for _, p := range m.GetApplicationProtocols() {
			if slices.Contains(c.alpn, p) {
				return 1
			}
		}
		return -1
	})
	switch len(cands) {
	case 1:
		return cands[0].fc, cands[0].name, nil
	case 0:
		if d := l.GetDefaultFilterChain(); d != nil {
			return d, "default_filter_chain", nil
		}
		return nil, "", fmt.Errorf("listener %s: no filter chain matches (server name %q, transport %s, ALPN %v): Envoy closes the connection",
			l.GetName(), c.sni, c.transport, c.alpn)
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.name
	}
	return nil, "", fmt.Errorf("listener %s: filter chains %v match equally; Envoy rejects such a listener", l.GetName(), names)
}

// serverNameScore ranks how a chain's server_names match an SNI: an exact
// name above any wildcard, a longer wildcard ("*.b.example.com") above a
// shorter one, any wildcard above a chain without server names; -1 when
// the chain has names and none matches.
func serverNameScore(names []string, sni string) int {
	if len(names) == 0 {
		return 0
	}
	best := -1
	for _, n := range names {
		n = strings.ToLower(n)
		switch {
		case n == sni && sni != "":
			best = max(best, 1<<20)
		case strings.HasPrefix(n, "*.") && len(sni) > len(n)-1 && strings.HasSuffix(sni, n[1:]):
			best = max(best, len(n))
		}
	}
	return best
}

// downstreamTLS reads a terminating filter chain's TLS context: the
// certificates it may present, each an SDS secret that must exist, what it
// offers and allows, and what it asks of clients' certificates.
func (s *Simulator) downstreamTLS(ts *corev3.TransportSocket) (*DownstreamTLS, error) {
	if ts.GetName() != "envoy.transport_sockets.tls" {
		return nil, errUnsupportedf("transport socket %s", ts.GetName())
	}
	ctx, err := unpack[tlsv3.DownstreamTlsContext](ts.GetTypedConfig(), "downstream transport socket")
	if err != nil {
		return nil, err
	}
	cv, err := clientValidationOf(ctx)
	if err != nil {
		return nil, err
	}
	common := ctx.GetCommonTlsContext()
	t := &DownstreamTLS{ALPN: common.GetAlpnProtocols(), validation: cv}
	// Envoy's server defaults are TLS 1.2 at least, 1.3 at most.
	if t.MinVersion, t.MaxVersion, err = tlsVersions(common.GetTlsParams(), tls.VersionTLS12, tls.VersionTLS13); err != nil {
		return nil, err
	}
	if t.Curves, err = curves(common.GetTlsParams().GetEcdhCurves()); err != nil {
		return nil, err
	}
	if cv != nil {
		t.ClientCertificate = "optional"
		if cv.required {
			t.ClientCertificate = "required"
		}
	}
	for _, sds := range common.GetTlsCertificateSdsSecretConfigs() {
		if _, ok := s.secrets[sds.GetName()]; !ok {
			return nil, fmt.Errorf("certificate secret %q is not served: Envoy keeps the listener warming", sds.GetName())
		}
		t.Certificates = append(t.Certificates, sds.GetName())
	}
	if len(common.GetTlsCertificates()) > 0 {
		t.Certificates = append(t.Certificates, "(inline certificate)")
	}
	return t, nil
}

// curves are the key exchange groups of ecdh_curves as crypto/tls numbers
// them; Envoy's server defaults, X25519 and P-256, for none. A name
// BoringSSL does not know makes Envoy reject the listener.
func curves(names []string) ([]tls.CurveID, error) {
	if len(names) == 0 {
		return []tls.CurveID{tls.X25519, tls.CurveP256}, nil
	}
	known := map[string]tls.CurveID{"X25519MLKEM768": tls.X25519MLKEM768, "X25519": tls.X25519, "P-256": tls.CurveP256, "P-384": tls.CurveP384, "P-521": tls.CurveP521}
	out := make([]tls.CurveID, 0, len(names))
	for _, n := range names {
		id, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("ecdh_curves: %q is not a group BoringSSL knows: Envoy rejects the listener", n)
		}
		out = append(out, id)
	}
	return out, nil
}

// tlsVersions are the least and greatest TLS versions tls_params allow,
// as crypto/tls numbers them; a version left to TLS_AUTO is Envoy's
// default, least or greatest.
func tlsVersions(p *tlsv3.TlsParameters, least, greatest uint16) (uint16, uint16, error) {
	if p == nil {
		return least, greatest, nil
	}
	if err := understand(p, "tls_minimum_protocol_version", "tls_maximum_protocol_version", "cipher_suites", "ecdh_curves"); err != nil {
		return 0, 0, err
	}
	if v := tlsVersionOf(p.GetTlsMinimumProtocolVersion()); v != 0 {
		least = v
	}
	if v := tlsVersionOf(p.GetTlsMaximumProtocolVersion()); v != 0 {
		greatest = v
	}
	return least, greatest, nil
}

// tlsVersionOf is a TLS version as crypto/tls numbers it; 0 for
// TLS_AUTO, which leaves Envoy's default.
func tlsVersionOf(v tlsv3.TlsParameters_TlsProtocol) uint16 {
	switch v {
	case tlsv3.TlsParameters_TLSv1_0:
		return tls.VersionTLS10
	case tlsv3.TlsParameters_TLSv1_1:
		return tls.VersionTLS11
	case tlsv3.TlsParameters_TLSv1_2:
		return tls.VersionTLS12
	case tlsv3.TlsParameters_TLSv1_3:
		return tls.VersionTLS13
	}
	return 0
}

// InspectsTLS reports whether the TCP listener on a port runs the TLS
// inspector, which reads a connection's first bytes for a ClientHello
// before a filter chain is chosen.
func (s *Simulator) InspectsTLS(port uint32) (bool, error) {
	l, err := s.listener(Request{Port: port})
	if err != nil {
		return false, err
	}
	for _, f := range l.GetListenerFilters() {
		if f.GetName() == tlsInspector {
			return true, nil
		}
	}
	return false, nil
}

// ExpectsProxyProtocol says whether a port's listener reads a PROXY
// protocol header (v1 or v2) before anything else: the client address
// is then the header's source.
func (s *Simulator) ExpectsProxyProtocol(port uint32) (bool, error) {
	l, err := s.listener(Request{Port: port})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(l.GetListenerFilters(), func(f *listenerv3.ListenerFilter) bool { return f.GetName() == proxyProtocolFilter }), nil
}

// ListenerFiltersTimeout is how long Envoy waits for the listener filters
// (the TLS inspector's first bytes) on a port's listener before it closes
// the connection: listener_filters_timeout, 15 s when unset.
func (s *Simulator) ListenerFiltersTimeout(port uint32) time.Duration {
	l, err := s.listener(Request{Port: port})
	if err != nil || l.GetListenerFiltersTimeout() == nil {
		return 15 * time.Second
	}
	return l.GetListenerFiltersTimeout().AsDuration()
}

// ListenerName is the name of the TCP listener on a port, which Envoy's
// runtime keys for that listener carry (its connection limit).
func (s *Simulator) ListenerName(port uint32) (string, error) {
	l, err := s.listener(Request{Port: port})
	if err != nil {
		return "", err
	}
	return l.GetName(), nil
}

// Ports are the ports Envoy listens on, by protocol ("tcp" or "udp").
func (s *Simulator) Ports() map[string][]uint32 {
	out := map[string][]uint32{}
	for _, l := range s.listeners {
		sa := l.GetAddress().GetSocketAddress()
		proto := "tcp"
		if sa.GetProtocol() == corev3.SocketAddress_UDP {
			proto = "udp"
		}
		out[proto] = append(out[proto], sa.GetPortValue())
	}
	return out
}

// proxyProtocolConfig reads the PROXY protocol filter: the simulator
// follows it as configured by default (v1 and v2, a header required).
func proxyProtocolConfig(f *listenerv3.ListenerFilter) error {
	cfg, err := unpack[proxyprotocolv3.ProxyProtocol](f.GetTypedConfig(), "PROXY protocol filter")
	if err != nil {
		return err
	}
	return understand(cfg)
}
