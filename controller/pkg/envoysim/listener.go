package envoysim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

const (
	tlsInspector = "envoy.filters.listener.tls_inspector"
	udpProxy     = "envoy.filters.udp_listener.udp_proxy"
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

// Simulate answers what Envoy does with req.
func (s *Simulator) Simulate(req Request) (*Answer, error) {
	l, err := s.listener(req)
	if err != nil {
		return nil, err
	}
	a := &Answer{Listener: l.GetName()}
	if req.UDP {
		return a, s.udp(l, a)
	}
	inspected := false
	for _, f := range l.GetListenerFilters() {
		if f.GetName() != tlsInspector {
			return nil, errUnsupportedf("listener %s: listener filter %s", l.GetName(), f.GetName())
		}
		inspected = true
	}
	c := connection{port: req.Port, transport: "raw_buffer"}
	// Only the TLS inspector tells Envoy a connection is TLS, and its SNI
	// and ALPN (listener_components.proto: FilterChainMatch).
	if inspected && req.TLS {
		c.transport, c.sni, c.alpn = "tls", strings.ToLower(req.SNI), req.ALPN
	}
	fc, name, err := selectFilterChain(l, c)
	if err != nil {
		return nil, err
	}
	a.FilterChain = name
	if err := understand(fc, "name", "filter_chain_match", "filters", "transport_socket", "metadata", "transport_socket_connect_timeout"); err != nil {
		return nil, err
	}
	terminates := fc.GetTransportSocket() != nil
	if terminates {
		var cv *clientValidation
		if a.DownstreamTLS, cv, err = s.downstreamTLS(fc.GetTransportSocket()); err != nil {
			return nil, fmt.Errorf("listener %s, filter chain %s: %w", l.GetName(), name, err)
		}
		if !req.TLS {
			return nil, fmt.Errorf("listener %s, filter chain %s terminates TLS, and the request is not TLS: the handshake fails", l.GetName(), name)
		}
		if cv != nil {
			a.ClientCertificate = "optional"
			if cv.required {
				a.ClientCertificate = "required"
			}
			if err := cv.check(req.ClientCertificate); err != nil {
				return nil, fmt.Errorf("listener %s, filter chain %s: %w", l.GetName(), name, err)
			}
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
	a.Filter = f.GetName()
	switch f.GetName() {
	case "envoy.filters.network.http_connection_manager":
		if req.TLS && !terminates {
			return nil, fmt.Errorf("listener %s, filter chain %s: a TLS connection reaches an HTTP connection manager that does not terminate TLS", l.GetName(), name)
		}
		return a, s.http(f, req, a)
	case "envoy.filters.network.tcp_proxy":
		return a, s.tcpProxy(f, req, a)
	}
	return nil, errUnsupportedf("network filter %s", f.GetName())
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
	return nil, fmt.Errorf("no listener on %s port %d: the connection is refused", proto, req.Port)
}

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

// downstreamTLS returns the certificates a terminating filter chain may
// present, each an SDS secret that must exist, and what it asks of clients'
// certificates.
func (s *Simulator) downstreamTLS(ts *corev3.TransportSocket) ([]string, *clientValidation, error) {
	if ts.GetName() != "envoy.transport_sockets.tls" {
		return nil, nil, errUnsupportedf("transport socket %s", ts.GetName())
	}
	ctx, err := unpack[tlsv3.DownstreamTlsContext](ts.GetTypedConfig(), "downstream transport socket")
	if err != nil {
		return nil, nil, err
	}
	cv, err := clientValidationOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, sds := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
		if _, ok := s.secrets[sds.GetName()]; !ok {
			return nil, nil, fmt.Errorf("certificate secret %q is not served: Envoy keeps the listener warming", sds.GetName())
		}
		names = append(names, sds.GetName())
	}
	if len(ctx.GetCommonTlsContext().GetTlsCertificates()) > 0 {
		names = append(names, "(inline certificate)")
	}
	return names, cv, nil
}
