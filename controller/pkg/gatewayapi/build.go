package gatewayapi

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
)

// table collects the virtual hosts of one Envoy listener. HTTP listeners
// have one route table; HTTPS listeners have one per server name, each its
// own filter chain.
type table struct {
	family  family
	port    int32
	cport   int32
	hosts   map[string]*vhost  // by domain
	streams map[string]*stream // by server name; "" for TCP and UDP
	https   bool               // an HTTPS listener shares the port
	// domains are the hosts' keys in order; nil when a host came or went.
	domains []string
	// emptied are hosts whose last route went since the last build.
	emptied []string
	// built is the IR built last, of builtVhosts and builtStreams.
	built        *ir.Listener
	builtVhosts  []*ir.VirtualHost
	builtStreams map[string]*stream
	chains       map[*ir.VirtualHost]*ir.Chain
	// validation is the port's client certificate validation, set on
	// every build; builtValidation the one built is of.
	validation, builtValidation *ir.ClientValidation
}

func (t *gatewayTranslator) table(l *listener) *table {
	k := l.spec.Port
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
		tb.host(h, l.certificates).add(o.meta, o.rank, t.state.epoch, rules)
	}
}

// removeRoutes takes back what addRoutes added. A virtual host no route
// holds any more goes when the table is built, unless a route came back to
// it meanwhile (a changed route is taken back, then attached again).
func (t *gatewayTranslator) removeRoutes(l *listener, hosts []string, meta *metav1.ObjectMeta, rules [][]*ir.Route) {
	tb := t.table(l)
	for _, h := range hosts {
		if tb.hosts[h].remove(meta, rules) {
			tb.emptied = append(tb.emptied, h)
		}
	}
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
		tb.validation = nil
	}
	for _, l := range t.listeners {
		if l.usable() && l.family == familyHTTP || l.usable() && l.spec.Protocol == gatewayv1.HTTPSProtocolType {
			h := l.hostname
			if h == "" {
				h = "*"
			}
			tb := t.table(l)
			tb.host(h, l.certificates)
			// Validation is per port: every HTTPS listener of the port
			// has the same.
			if l.clientValidation != nil {
				tb.validation = l.clientValidation
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

// listener is the table's IR listener: the one built last time while its
// virtual hosts and streams are the same, so that a listener of thousands
// of server names is not rebuilt for a change to one's routes.
func (tb *table) listener() *ir.Listener {
	vhosts := make([]*ir.VirtualHost, 0, len(tb.hosts))
	for _, d := range tb.sortedDomains() {
		vhosts = append(vhosts, tb.hosts[d].virtualHost())
	}
	if tb.built != nil && slices.Equal(vhosts, tb.builtVhosts) && sameStreams(tb.streams, tb.builtStreams) && tb.validation.Equal(tb.builtValidation) {
		return tb.built
	}
	if !tb.validation.Equal(tb.builtValidation) {
		// Every HTTPS chain carries the validation.
		tb.chains = nil
	}
	tb.built, tb.builtVhosts, tb.builtStreams, tb.builtValidation = tb.build(vhosts), vhosts, maps.Clone(tb.streams), tb.validation
	return tb.built
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
	// HTTPS and TLS: a filter chain per server name. An HTTP virtual host
	// and a TLS route for the same name cannot share a chain; the HTTPS
	// listener's routes keep it.
	name, proto := fmt.Sprintf("tls_%d", tb.port), ir.TLS
	if tb.https {
		name, proto = fmt.Sprintf("https_%d", tb.port), ir.HTTPS
	}
	l := &ir.Listener{Name: name, Protocol: proto, Port: tb.port, ContainerPort: tb.cport}
	// A server name's chain depends on its virtual host alone: chains of
	// unchanged hosts are the same objects, which the second stage keeps.
	chains := make(map[*ir.VirtualHost]*ir.Chain, len(vhosts))
	for _, vh := range vhosts {
		c, ok := tb.chains[vh]
		if !ok {
			d := vh.Name
			c = &ir.Chain{
				Certificates:     tb.hosts[d].certs,
				HTTP:             &ir.RouteTable{Name: name + "/" + d, VirtualHosts: []*ir.VirtualHost{vh}},
				ClientValidation: tb.validation,
			}
			if d != "*" {
				c.ServerNames = []string{d}
			}
		}
		chains[vh] = c
		l.Chains = append(l.Chains, c)
	}
	tb.chains = chains
	for _, d := range sortedKeys(tb.streams) {
		if _, taken := tb.hosts[d]; taken || d == "*" && tb.hosts["*"] != nil {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
