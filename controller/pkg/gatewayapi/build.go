package gatewayapi

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/ingress"
	"isobar.dev/controller/pkg/ir"
)

// table collects the virtual hosts of one Envoy listener. HTTP listeners
// have one route table; an HTTPS port has one filter chain per HTTPS
// listener, selected by the listener's hostname as SNI, whose route table
// holds that listener's virtual hosts and answers 421 for the hostnames of
// the port's other listeners.
type table struct {
	family  family
	port    int32
	cport   int32
	hosts   map[string]*vhost  // by domain
	streams map[string]*stream // by server name; "" for TCP and UDP
	https   bool               // an HTTPS listener shares the port
	// domains are the hosts' keys in order; nil when a host came or went.
	domains []string
	// touched are the domains whose routes changed since the last build,
	// which builds only them again while no host came or went.
	touched []string
	// emptied are hosts whose last route went since the last build.
	emptied []string
	// built is the IR built last, of builtVhosts and builtStreams.
	built        *ir.Listener
	builtVhosts  []*ir.VirtualHost
	builtStreams map[string]*stream
	chains       map[string]builtChain // by listener hostname
	// validation is the port's client certificate validation, set on
	// every build; builtValidation the one built is of.
	validation, builtValidation *ir.ClientValidation
	// listeners are the port's usable HTTPS listeners, set on every
	// build; builtListeners the ones built is of.
	listeners, builtListeners []httpsListener
	// fallback is the IR name of the certificate the chain without a
	// hostname presents first, to clients without a server name, when it
	// serves HTTPProxies that enable the fallback; set on every build,
	// builtFallback the one built is of.
	fallback, builtFallback string
	// ingressNames says the port is a Gateway's ingress-http or
	// ingress-https listener's: Envoy names are the design's for
	// Ingress (Contour's design for multiple listeners).
	ingressNames bool
}

// builtChain is an HTTPS listener's chain and the virtual hosts of its own
// it was built with.
type builtChain struct {
	chain *ir.Chain
	own   []*ir.VirtualHost
}

// httpsListener is what an HTTPS listener's filter chain is made of.
type httpsListener struct {
	hostname string // "" for any
	certs    []string
	// tls is what a root HTTPProxy's TLS virtual host asks of its chain.
	tls *ir.ChainTLS
}

// tableKey is a table's port and transport: a UDP listener shares its
// port number with no other protocol's, as Envoy binds them apart.
type tableKey struct {
	port gatewayv1.PortNumber
	udp  bool
}

func (t *gatewayTranslator) table(l *listener) *table {
	k := tableKey{l.spec.Port, l.family == familyUDP}
	tb, ok := t.tables[k]
	if !ok {
		tb = &table{family: l.family, port: int32(l.spec.Port), cport: l.containerPort, hosts: map[string]*vhost{}, streams: map[string]*stream{}}
		t.tables[k] = tb
	}
	if l.spec.Protocol == gatewayv1.HTTPSProtocolType {
		tb.https = true
	}
	return tb
}

func (tb *table) host(domain string, certs []string) *vhost {
	v, ok := tb.hosts[domain]
	if !ok {
		v = &vhost{domain: domain, certs: certs}
		tb.hosts[domain] = v
		tb.domains = nil
	}
	return v
}

func (tb *table) sortedDomains() []string {
	if tb.domains == nil {
		tb.domains = sortedKeys(tb.hosts)
	}
	return tb.domains
}

// addRoutes adds a route's translated rules to the virtual hosts of its
// hostnames on listener l.
func (t *gatewayTranslator) addRoutes(l *listener, hosts []string, o *outcome, rules [][]*ir.Route) {
	tb := t.table(l)
	for _, h := range hosts {
		tb.host(h, l.certificates).add(o.meta, o.source, o.rank, t.state.epoch, rules)
	}
	tb.touch(hosts)
}

// removeRoutes takes back what addRoutes added. A virtual host no route
// holds any more goes when the table is built, unless a route came back to
// it meanwhile (a changed route is taken back, then attached again).
func (t *gatewayTranslator) removeRoutes(l *listener, hosts []string, o *outcome, rules [][]*ir.Route) {
	tb := t.table(l)
	for _, h := range hosts {
		if tb.hosts[h].remove(o.meta, o.source, rules) {
			tb.emptied = append(tb.emptied, h)
		}
	}
	tb.touch(hosts)
}

// prune drops the virtual hosts left without routes.
func (tb *table) prune() {
	for _, h := range tb.emptied {
		if v, ok := tb.hosts[h]; ok && v.adds == 0 {
			delete(tb.hosts, h)
			tb.domains = nil
		}
	}
	tb.emptied = tb.emptied[:0]
}

// build assembles the IR. Every usable HTTP or HTTPS listener gets a
// virtual host for its own hostname even without routes, so that requests
// for it get a 404 there instead of reaching a less specific listener's
// routes.
func (t *gatewayTranslator) build() *ir.Gateway {
	for _, tb := range t.tables {
		tb.prune()
		tb.validation, tb.fallback = nil, ""
		tb.listeners = tb.listeners[:0]
	}
	for _, l := range t.listeners {
		if l.usable() && l.spec.Protocol == gatewayv1.TLSProtocolType && l.set != nil && l.set.proxy != nil {
			// A root HTTPProxy's passthrough virtual host: a chain of its
			// own once its tree is attached.
			if tls := t.proxyChainTLS(l); tls != nil && tls.TCP != nil {
				tb := t.table(l)
				tb.listeners = append(tb.listeners, httpsListener{hostname: l.hostname, tls: tls})
			}
			continue
		}
		if l.usable() && l.family == familyHTTP || l.usable() && l.spec.Protocol == gatewayv1.HTTPSProtocolType {
			h := l.hostname
			if h == "" {
				h = "*"
			}
			tb := t.table(l)
			tb.host(h, l.certificates)
			if l.spec.Protocol == gatewayv1.HTTPSProtocolType {
				hl := httpsListener{hostname: l.hostname, certs: l.certificates, tls: t.proxyChainTLS(l)}
				if hl.tls != nil && hl.tls.Fallback {
					tb.fallback = t.fallbackCertificate(l)
				}
				tb.listeners = append(tb.listeners, hl)
			}
			// Validation is per port: every HTTPS listener of the port
			// has the same.
			if l.clientValidation != nil {
				tb.validation = l.clientValidation
			}
		}
	}
	if t.ingressShape != nil {
		for _, l := range t.gw.Spec.Listeners {
			if tb, ok := t.tables[tableKey{port: l.Port}]; ok {
				tb.ingressNames = true
			}
		}
	}
	g := &ir.Gateway{Name: t.gw.Namespace + "/" + t.gw.Name}
	for _, tb := range t.tables {
		// The state keeps tables its routes have left, and those of
		// stream routes that are gone.
		if len(tb.hosts) > 0 || len(tb.streams) > 0 {
			g.Listeners = append(g.Listeners, tb.listener())
		}
	}
	slices.SortFunc(g.Listeners, func(a, b *ir.Listener) int { return cmp.Compare(a.Port, b.Port) })
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

// fallbackCertificate resolves the profile's fallback certificate for the
// root HTTPProxy of l, which checked that it may use it; "" when it cannot
// be resolved (the root's status says why).
func (t *gatewayTranslator) fallbackCertificate(l *listener) string {
	fb := t.proxyOptions.FallbackCertificate
	if fb == nil {
		return ""
	}
	ns := gatewayv1.Namespace(fb.Namespace)
	name, problem := t.resolveCertificate(gatewayv1.SecretObjectReference{Namespace: &ns, Name: gatewayv1.ObjectName(fb.Name)}, t.ownerOf(l))
	if problem != nil {
		return ""
	}
	return name
}

// proxyChainTLS is what the root HTTPProxy of l, a TLS virtual host's
// listener, asks of its chain, as its attached tree found it.
func (t *gatewayTranslator) proxyChainTLS(l *listener) *ir.ChainTLS {
	if l.set == nil || l.set.proxy == nil {
		return nil
	}
	if o := t.state.applied[&l.set.proxy.ObjectMeta]; o != nil {
		return o.chainTLS
	}
	return nil
}

// listener is the table's IR listener: the one built last time while its
// virtual hosts and streams are the same, so that a listener of thousands
// of server names is not rebuilt for a change to one's routes.
func (tb *table) listener() *ir.Listener {
	vhosts := tb.virtualHosts()
	sameListeners := slices.EqualFunc(tb.listeners, tb.builtListeners, func(a, b httpsListener) bool {
		return a.hostname == b.hostname && slices.Equal(a.certs, b.certs) && a.tls == b.tls
	})
	sameListeners = sameListeners && tb.fallback == tb.builtFallback
	if tb.built != nil && slices.Equal(vhosts, tb.builtVhosts) && sameStreams(tb.streams, tb.builtStreams) && tb.validation.Equal(tb.builtValidation) && sameListeners {
		return tb.built
	}
	if !tb.validation.Equal(tb.builtValidation) || !sameListeners {
		// Every HTTPS chain carries the validation, and the port's
		// listeners' hostnames.
		tb.chains = nil
	}
	tb.built, tb.builtVhosts, tb.builtStreams, tb.builtValidation = tb.build(vhosts), vhosts, maps.Clone(tb.streams), tb.validation
	tb.builtListeners, tb.builtFallback = slices.Clone(tb.listeners), tb.fallback
	return tb.built
}

// touch records that the routes of domains changed, unless the next build
// builds every virtual host anyway (the first, or one after a host came or
// went), as a full translation's does: its list would hold every route's
// hostnames.
func (tb *table) touch(domains []string) {
	if tb.built != nil && tb.domains != nil {
		tb.touched = append(tb.touched, domains...)
	}
}

// virtualHosts returns the table's IR virtual hosts in domain order. While
// no host came or went, the ones built last keep their places and only the
// touched are built again: a change to one route of a listener of 100,000
// hostnames looks up one host, not all of them.
func (tb *table) virtualHosts() []*ir.VirtualHost {
	touched := tb.touched
	tb.touched = nil
	if tb.built != nil && tb.domains != nil && len(tb.builtVhosts) == len(tb.domains) {
		if len(touched) == 0 {
			return tb.builtVhosts
		}
		vhosts := slices.Clone(tb.builtVhosts)
		for _, d := range touched {
			if i, ok := slices.BinarySearch(tb.domains, d); ok {
				vhosts[i] = tb.hosts[d].virtualHost()
			}
		}
		return vhosts
	}
	vhosts := make([]*ir.VirtualHost, 0, len(tb.hosts))
	for _, d := range tb.sortedDomains() {
		vhosts = append(vhosts, tb.hosts[d].virtualHost())
	}
	return vhosts
}

func sameStreams(a, b map[string]*stream) bool {
	return maps.EqualFunc(a, b, func(x, y *stream) bool {
		return x.owner == y.owner && slices.Equal(x.certs, y.certs) && reflect.DeepEqual(x.dest, y.dest)
	})
}

// build makes the IR listener of the table with its virtual hosts in
// domain order.
func (tb *table) build(vhosts []*ir.VirtualHost) *ir.Listener {
	switch tb.family {
	case familyHTTP:
		name := fmt.Sprintf("http_%d", tb.port)
		if tb.ingressNames {
			name = ingress.EnvoyHTTP
		}
		rt := &ir.RouteTable{Name: name, VirtualHosts: vhosts}
		return &ir.Listener{Name: name, Protocol: ir.HTTP, Port: tb.port, ContainerPort: tb.cport, HTTP: rt}
	case familyTCP, familyUDP:
		dest := &ir.Destination{}
		if s, ok := tb.streams[""]; ok {
			dest = s.dest
		}
		if tb.family == familyTCP {
			return &ir.Listener{Name: fmt.Sprintf("tcp_%d", tb.port), Protocol: ir.TCP, Port: tb.port, ContainerPort: tb.cport, TCP: dest}
		}
		return &ir.Listener{Name: fmt.Sprintf("udp_%d", tb.port), Protocol: ir.UDP, Port: tb.port, ContainerPort: tb.cport, UDP: dest}
	}
	// HTTPS and TLS: a filter chain per HTTPS listener, then one per TLS
	// route server name.
	name, proto := fmt.Sprintf("tls_%d", tb.port), ir.TLS
	if tb.https {
		name, proto = fmt.Sprintf("https_%d", tb.port), ir.HTTPS
	}
	routes := name
	if tb.ingressNames && tb.https {
		name, routes = ingress.EnvoyHTTPS, "https"
	}
	l := &ir.Listener{Name: name, Protocol: proto, Port: tb.port, ContainerPort: tb.cport}
	l.Chains = tb.httpsChains(routes, vhosts)
	for _, d := range sortedKeys(tb.streams) {
		if tb.servesName(d) {
			continue
		}
		s := tb.streams[d]
		c := &ir.Chain{Certificates: s.certs, TCP: s.dest}
		if d != "*" && d != "" {
			c.ServerNames = []string{d}
		}
		l.Chains = append(l.Chains, c)
	}
	return l
}

// servesName reports whether an HTTPS listener's chain takes connections
// for server name d (a TLS route's), which then cannot have its own.
func (tb *table) servesName(d string) bool {
	for _, hl := range tb.listeners {
		if hl.hostname == d || hl.hostname == "" && (d == "*" || d == "") {
			return true
		}
	}
	return false
}

// httpsChains makes a filter chain per HTTPS listener of the port: the
// connection's SNI picks the listener (the most specific hostname, as
// Envoy matches server names), and a request whose Host belongs to
// another listener of the port gets 421 Misdirected Request, so that a
// client reusing a connection (HTTP/2 coalescing) for another hostname
// never reaches routes, or a client certificate check, that the hostname
// was not served with. A Host of no listener's gets 404 from the
// listener without a hostname, 421 from the others. A chain whose virtual
// hosts are unchanged is the same object, which the second stage keeps.
func (tb *table) httpsChains(prefix string, vhosts []*ir.VirtualHost) []*ir.Chain {
	if len(tb.listeners) == 0 {
		return nil
	}
	listeners := slices.Clone(tb.listeners)
	slices.SortFunc(listeners, func(a, b httpsListener) int { return strings.Compare(a.hostname, b.hostname) })
	owned := make(map[string][]*ir.VirtualHost, len(listeners))
	for _, vh := range vhosts {
		if owner, ok := listenerOf(vh.Name, listeners); ok {
			owned[owner] = append(owned[owner], vh)
		}
	}
	// The chain without a hostname, which takes connections without a
	// server name, serves the virtual hosts of the HTTPProxies that
	// enable the fallback certificate too (its certificate is theirs).
	for _, hl := range listeners {
		if hl.tls != nil && hl.tls.Fallback && hl.hostname != "" {
			owned[""] = append(owned[""], owned[hl.hostname]...)
		}
	}
	chains := make(map[string]builtChain, len(listeners))
	var out []*ir.Chain
	for _, hl := range listeners {
		own := owned[hl.hostname]
		b, ok := tb.chains[hl.hostname]
		if !ok || !slices.Equal(b.own, own) {
			// The misdirected hosts follow the port's listeners, which
			// are the same while tb.chains is kept.
			vhs := slices.Clone(own)
			for _, other := range listeners {
				fallback := hl.hostname == "" && other.tls != nil && other.tls.Fallback
				if other.hostname != "" && other.hostname != hl.hostname && !fallback {
					vhs = append(vhs, misdirected(other.hostname))
				}
			}
			if hl.hostname != "" {
				vhs = append(vhs, misdirected("*"))
			}
			certs := hl.certs
			if hl.hostname == "" && tb.fallback != "" {
				// Envoy presents the first certificate to a client
				// without a server name: the fallback.
				certs = append([]string{tb.fallback}, slices.DeleteFunc(slices.Clone(certs), func(c string) bool { return c == tb.fallback })...)
			}
			c := &ir.Chain{
				Certificates:     certs,
				HTTP:             &ir.RouteTable{Name: prefix + "/" + orAnyHost(hl.hostname), VirtualHosts: vhs},
				ClientValidation: tb.validation,
			}
			if hl.tls != nil && hl.tls.TCP != nil {
				// A root HTTPProxy's tcpproxy: its connections are
				// forwarded, terminated or passed through.
				c.HTTP, c.TCP, c.ClientValidation = nil, hl.tls.TCP, nil
			}
			if hl.tls != nil {
				c.MinTLS, c.MaxTLS, c.ForwardClientCert = hl.tls.MinTLS, hl.tls.MaxTLS, hl.tls.Forward
				if hl.tls.Validation != nil {
					c.ClientValidation = hl.tls.Validation
				}
			}
			if hl.hostname != "" {
				c.ServerNames = []string{hl.hostname}
			}
			b = builtChain{chain: c, own: own}
		}
		chains[hl.hostname] = b
		out = append(out, b.chain)
	}
	tb.chains = chains
	return out
}

// listenerOf returns the hostname of the listener a virtual host's domain
// belongs to: the most specific that matches it ("*" is the listener
// without a hostname's). Listener isolation has already given each domain
// to that listener alone.
func listenerOf(domain string, listeners []httpsListener) (string, bool) {
	if domain == "*" {
		domain = ""
	}
	best, found := "", false
	for _, hl := range listeners {
		if !hostname.Matches(hl.hostname, domain) {
			continue
		}
		if !found || hostname.MoreSpecific(hl.hostname, best) {
			best, found = hl.hostname, true
		}
	}
	return best, found
}

// misdirected is a virtual host that answers 421 for a domain another
// listener serves.
func misdirected(domain string) *ir.VirtualHost {
	return &ir.VirtualHost{Name: "misdirected/" + domain, Domains: []string{domain}, Routes: []*ir.Route{{
		Name:           "misdirected",
		Match:          ir.Match{PathType: ir.PathPrefix, Path: "/"},
		DirectResponse: &ir.DirectResponse{Status: 421},
	}}}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
