package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/hostname"
	"isobar.dev/controller/pkg/ir"
)

// A Table collects the virtual hosts of one Envoy listener. HTTP listeners
// have one route table; an HTTPS port has one filter chain per HTTPS
// listener, selected by the listener's hostname as SNI, whose route table
// holds that listener's virtual hosts and answers 421 for the hostnames of
// the port's other listeners.
type Table struct {
	family  Family
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
	built           *ir.Listener
	builtVhosts     []*ir.VirtualHost
	builtStreams    map[string]*stream
	chains          map[string]builtChain // by listener hostname
	builtValidation *ir.ClientValidation
	builtListeners  []HTTPSListener
	builtFallback   string

	// What the processors set on every build (see State.Prepare):
	// Validation is the port's client certificate validation.
	Validation *ir.ClientValidation
	// Listeners are the port's usable HTTPS listeners.
	Listeners []HTTPSListener
	// Fallback is the IR name of the certificate the chain without a
	// hostname presents first, to clients without a server name, when it
	// serves HTTPProxies that enable the fallback.
	Fallback string
	// Names, when set, name the Envoy listener and its route
	// configurations instead of the port.
	Names *Names
}

// Names are the Envoy names of a table's listener and of its HTTPS
// chains' route configurations (their prefix): a Gateway's ingress-http
// and ingress-https listeners have the names Contour's design for
// multiple listeners gives them.
type Names struct {
	Listener, Routes string
}

// builtChain is an HTTPS listener's chain and the virtual hosts of its own
// it was built with.
type builtChain struct {
	chain *ir.Chain
	own   []*ir.VirtualHost
}

// An HTTPSListener is what an HTTPS listener's filter chain is made of.
type HTTPSListener struct {
	Hostname string // "" for any
	Certs    []string
	// TLS is what a root HTTPProxy's TLS virtual host asks of its chain.
	TLS *ir.ChainTLS
}

// Table returns the table of a listener's port, made when it is the
// first.
func (s *State[D]) Table(l Listener) *Table {
	tb, ok := s.tables[l.Key]
	if !ok {
		tb = &Table{family: l.Family, port: int32(l.Key.Port), cport: l.ContainerPort, hosts: map[string]*vhost{}, streams: map[string]*stream{}}
		s.tables[l.Key] = tb
	}
	if l.HTTPS {
		tb.https = true
	}
	return tb
}

// Family is the family of the table's listeners.
func (tb *Table) Family() Family { return tb.family }

// HTTPS says an HTTPS listener shares the table's port.
func (tb *Table) HTTPS() bool { return tb.https }

// Host makes sure the table has a virtual host for domain, served with
// certs: every usable HTTP or HTTPS listener has one for its own
// hostname even without routes.
func (tb *Table) Host(domain string, certs []string) { tb.host(domain, certs) }

func (tb *Table) host(domain string, certs []string) *vhost {
	v, ok := tb.hosts[domain]
	if !ok {
		v = &vhost{domain: domain, certs: certs}
		tb.hosts[domain] = v
		tb.domains = nil
	}
	return v
}

func (tb *Table) sortedDomains() []string {
	if tb.domains == nil {
		tb.domains = sortedKeys(tb.hosts)
	}
	return tb.domains
}

// addRoutes adds a route's translated rules to the virtual hosts of its
// hostnames.
func (tb *Table) addRoutes(hosts, certs []string, meta *metav1.ObjectMeta, src Source, rank int32, epoch uint64, rules [][]*ir.Route, policy *ir.VirtualHostPolicy) {
	for _, h := range hosts {
		v := tb.host(h, certs)
		v.add(meta, src, rank, epoch, rules)
		if policy != nil {
			v.policy, v.policyOwner = policy, meta
		}
	}
	tb.touch(hosts)
}

// removeRoutes takes back what addRoutes added. A virtual host no route
// holds any more goes when the table is built, unless a route came back to
// it meanwhile (a changed route is taken back, then attached again).
func (tb *Table) removeRoutes(hosts []string, meta *metav1.ObjectMeta, src Source, rules [][]*ir.Route) {
	for _, h := range hosts {
		if tb.hosts[h].remove(meta, src, rules) {
			tb.emptied = append(tb.emptied, h)
		}
	}
	tb.touch(hosts)
}

// prune drops the virtual hosts left without routes.
func (tb *Table) prune() {
	for _, h := range tb.emptied {
		if v, ok := tb.hosts[h]; ok && v.adds == 0 {
			delete(tb.hosts, h)
			tb.domains = nil
		}
	}
	tb.emptied = tb.emptied[:0]
}

// listener is the table's IR listener: the one built last time while its
// virtual hosts and streams are the same, so that a listener of thousands
// of server names is not rebuilt for a change to one's routes. What it
// builds again it records in ch, unless ch is nil.
func (tb *Table) listener(ch *ir.Changes) *ir.Listener {
	vhosts, rebuilt := tb.virtualHosts(ch != nil)
	sameListeners := slices.EqualFunc(tb.Listeners, tb.builtListeners, func(a, b HTTPSListener) bool {
		return a.Hostname == b.Hostname && slices.Equal(a.Certs, b.Certs) && a.TLS == b.TLS
	})
	sameListeners = sameListeners && tb.Fallback == tb.builtFallback
	if tb.built != nil && len(rebuilt) == 0 && slices.Equal(vhosts, tb.builtVhosts) && sameStreams(tb.streams, tb.builtStreams) && tb.Validation.Equal(tb.builtValidation) && sameListeners {
		return tb.built
	}
	if !tb.Validation.Equal(tb.builtValidation) || !sameListeners {
		// Every HTTPS chain carries the validation, and the port's
		// listeners' hostnames.
		tb.chains = nil
	}
	tb.built, tb.builtVhosts, tb.builtStreams, tb.builtValidation = tb.build(vhosts, rebuilt, ch), vhosts, maps.Clone(tb.streams), tb.Validation
	tb.builtListeners, tb.builtFallback = slices.Clone(tb.Listeners), tb.Fallback
	if ch != nil {
		ch.Listeners[tb.built.Name] = true
	}
	return tb.built
}

// touch records that the routes of domains changed, unless the next build
// builds every virtual host anyway (the first, or one after a host came or
// went), as a full translation's does: its list would hold every route's
// hostnames.
func (tb *Table) touch(domains []string) {
	if tb.built != nil && tb.domains != nil {
		tb.touched = append(tb.touched, domains...)
	}
}

// virtualHosts returns the table's IR virtual hosts in domain order, and
// when track is set the domains of those built again. While no host came or went, the ones
// built last keep their places and only the touched are built again: a
// change to one route of a listener of 100,000 hostnames looks up one
// host, not all of them.
func (tb *Table) virtualHosts(track bool) ([]*ir.VirtualHost, map[string]bool) {
	touched := tb.touched
	tb.touched = nil
	var rebuilt map[string]bool
	get := func(d string) *ir.VirtualHost {
		v := tb.hosts[d]
		if track && v.built == nil {
			if rebuilt == nil {
				rebuilt = map[string]bool{}
			}
			rebuilt[d] = true
		}
		return v.virtualHost()
	}
	if tb.built != nil && tb.domains != nil && len(tb.builtVhosts) == len(tb.domains) {
		if len(touched) == 0 {
			return tb.builtVhosts, nil
		}
		vhosts := slices.Clone(tb.builtVhosts)
		for _, d := range touched {
			if i, ok := slices.BinarySearch(tb.domains, d); ok {
				vhosts[i] = get(d)
			}
		}
		return vhosts, rebuilt
	}
	vhosts := make([]*ir.VirtualHost, 0, len(tb.hosts))
	for _, d := range tb.sortedDomains() {
		vhosts = append(vhosts, get(d))
	}
	return vhosts, rebuilt
}

func sameStreams(a, b map[string]*stream) bool {
	return maps.EqualFunc(a, b, func(x, y *stream) bool {
		return x.owner == y.owner && slices.Equal(x.certs, y.certs) && reflect.DeepEqual(x.dest, y.dest)
	})
}

// build makes the IR listener of the table with its virtual hosts in
// domain order, of which those named in rebuilt were built again.
func (tb *Table) build(vhosts []*ir.VirtualHost, rebuilt map[string]bool, ch *ir.Changes) *ir.Listener {
	switch tb.family {
	case FamilyHTTP:
		name := fmt.Sprintf("http_%d", tb.port)
		if tb.Names != nil {
			name = tb.Names.Listener
		}
		rt := &ir.RouteTable{Name: name, VirtualHosts: vhosts}
		if ch != nil {
			ch.RouteTables[name] = rebuilt
		}
		return &ir.Listener{Name: name, Protocol: ir.HTTP, Port: tb.port, ContainerPort: tb.cport, HTTP: rt}
	case FamilyTCP, FamilyUDP:
		dest := &ir.Destination{}
		if s, ok := tb.streams[""]; ok {
			dest = s.dest
		}
		if tb.family == FamilyTCP {
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
	if tb.Names != nil && tb.https {
		name, routes = tb.Names.Listener, tb.Names.Routes
	}
	l := &ir.Listener{Name: name, Protocol: proto, Port: tb.port, ContainerPort: tb.cport}
	l.Chains = tb.httpsChains(routes, vhosts, rebuilt, ch)
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
func (tb *Table) servesName(d string) bool {
	for _, hl := range tb.Listeners {
		if hl.Hostname == d || hl.Hostname == "" && (d == "*" || d == "") {
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
func (tb *Table) httpsChains(prefix string, vhosts []*ir.VirtualHost, rebuilt map[string]bool, ch *ir.Changes) []*ir.Chain {
	if len(tb.Listeners) == 0 {
		return nil
	}
	listeners := slices.Clone(tb.Listeners)
	slices.SortFunc(listeners, func(a, b HTTPSListener) int { return strings.Compare(a.Hostname, b.Hostname) })
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
		if hl.TLS != nil && hl.TLS.Fallback && hl.Hostname != "" {
			owned[""] = append(owned[""], owned[hl.Hostname]...)
		}
	}
	chains := make(map[string]builtChain, len(listeners))
	var out []*ir.Chain
	for _, hl := range listeners {
		own := owned[hl.Hostname]
		b, ok := tb.chains[hl.Hostname]
		if !ok || !slices.Equal(b.own, own) {
			// The misdirected hosts follow the port's listeners, which
			// are the same while tb.chains is kept.
			vhs := slices.Clone(own)
			for _, other := range listeners {
				fallback := hl.Hostname == "" && other.TLS != nil && other.TLS.Fallback
				if other.Hostname != "" && other.Hostname != hl.Hostname && !fallback {
					vhs = append(vhs, misdirected(other.Hostname))
				}
			}
			if hl.Hostname != "" {
				vhs = append(vhs, misdirected("*"))
			}
			certs := hl.Certs
			if hl.Hostname == "" && tb.Fallback != "" {
				// Envoy presents the first certificate to a client
				// without a server name: the fallback.
				certs = append([]string{tb.Fallback}, slices.DeleteFunc(slices.Clone(certs), func(c string) bool { return c == tb.Fallback })...)
			}
			c := &ir.Chain{
				Certificates:     certs,
				HTTP:             &ir.RouteTable{Name: prefix + "/" + hostname.OrAny(hl.Hostname), VirtualHosts: vhs},
				ClientValidation: tb.Validation,
			}
			if hl.TLS != nil && hl.TLS.TCP != nil {
				// A root HTTPProxy's tcpproxy: its connections are
				// forwarded, terminated or passed through.
				c.HTTP, c.TCP, c.ClientValidation = nil, hl.TLS.TCP, nil
			}
			if hl.TLS != nil {
				c.MinTLS, c.MaxTLS, c.ForwardClientCert = hl.TLS.MinTLS, hl.TLS.MaxTLS, hl.TLS.Forward
				if hl.TLS.Validation != nil {
					c.ClientValidation = hl.TLS.Validation
				}
			}
			if hl.Hostname != "" {
				c.ServerNames = []string{hl.Hostname}
			}
			b = builtChain{chain: c, own: own}
			if ch != nil && c.HTTP != nil {
				// The misdirected hosts are alike while they have
				// their names. A tcpproxy's chain has no table: the
				// second stage builds it on every build of its
				// listener.
				ch.RouteTables[c.HTTP.Name] = rebuilt
				ch.Chains[c.HTTP.Name] = true
			}
		}
		chains[hl.Hostname] = b
		out = append(out, b.chain)
	}
	tb.chains = chains
	return out
}

// listenerOf returns the hostname of the listener a virtual host's domain
// belongs to: the most specific that matches it ("*" is the listener
// without a hostname's). Listener isolation has already given each domain
// to that listener alone.
func listenerOf(domain string, listeners []HTTPSListener) (string, bool) {
	if domain == "*" {
		domain = ""
	}
	best, found := "", false
	for _, hl := range listeners {
		if !hostname.Matches(hl.Hostname, domain) {
			continue
		}
		if !found || hostname.MoreSpecific(hl.Hostname, best) {
			best, found = hl.Hostname, true
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
