package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
)

// table collects the virtual hosts of one Envoy listener before they are
// put in order. HTTP listeners have one route table; HTTPS listeners have
// one per server name, each its own filter chain.
type table struct {
	family  family
	port    int32
	cport   int32
	hosts   map[string]*vhost  // by domain
	streams map[string]*stream // by server name; "" for TCP and UDP
	https   bool               // an HTTPS listener shares the port
}

type vhost struct {
	domain string
	certs  []string
	// adds are the routes' contributions, flattened into entries only when
	// the virtual host must be sorted again; fingerprint and n identify the
	// set of IR routes they hold.
	adds        []vhostAdd
	fingerprint uint64
	n           int
}

type vhostAdd struct {
	meta  *metav1.ObjectMeta
	rules [][]*ir.Route
}

// entry is a route with what orders it among its virtual host's routes.
type entry struct {
	route     *ir.Route
	created   metav1.Time
	namespace string
	name      string
	rule      int
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
	}
	return v
}

// addRoutes adds a route's translated rules to the virtual hosts of its
// hostnames on listener l.
func (t *gatewayTranslator) addRoutes(l *listener, hosts []string, meta *metav1.ObjectMeta, rules [][]*ir.Route) {
	tb := t.table(l)
	var fp uint64
	n := 0
	for _, rs := range rules {
		for _, r := range rs {
			fp += routeHash(r)
			n++
		}
	}
	for _, h := range hosts {
		v := tb.host(h, l.certificates)
		v.adds = append(v.adds, vhostAdd{meta: meta, rules: rules})
		v.fingerprint += fp
		v.n += n
	}
}

// build assembles the IR. Every usable HTTP or HTTPS listener gets a
// virtual host for its own hostname even without routes, so that requests
// for it get a 404 there instead of reaching a less specific listener's
// routes.
func (t *gatewayTranslator) build() *ir.Gateway {
	for _, l := range t.listeners {
		if l.usable() && l.family == familyHTTP || l.usable() && l.spec.Protocol == gatewayv1.HTTPSProtocolType {
			h := l.hostname
			if h == "" {
				h = "*"
			}
			t.table(l).host(h, l.certificates)
		}
	}
	g := &ir.Gateway{Name: t.gw.Namespace + "/" + t.gw.Name}
	for _, tb := range t.tables {
		g.Listeners = append(g.Listeners, tb.listener(t))
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

func (tb *table) listener(t *gatewayTranslator) *ir.Listener {
	switch tb.family {
	case familyHTTP:
		name := fmt.Sprintf("http_%d", tb.port)
		rt := &ir.RouteTable{Name: name}
		for _, d := range sortedKeys(tb.hosts) {
			rt.VirtualHosts = append(rt.VirtualHosts, t.virtualHost(name, tb.hosts[d]))
		}
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
	for _, d := range sortedKeys(tb.hosts) {
		v := tb.hosts[d]
		c := &ir.Chain{
			Certificates: v.certs,
			HTTP:         &ir.RouteTable{Name: name + "/" + d, VirtualHosts: []*ir.VirtualHost{t.virtualHost(name, v)}},
		}
		if d != "*" {
			c.ServerNames = []string{d}
		}
		l.Chains = append(l.Chains, c)
	}
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

// sortedVhost is a virtual host built by an earlier translation, with the
// fingerprint of the routes it was built from.
type sortedVhost struct {
	fingerprint uint64
	n           int
	vh          *ir.VirtualHost
}

// virtualHost puts a virtual host's routes in precedence order, or reuses
// the earlier translation's virtual host when it holds the same routes: an
// IR route's place depends only on the route object it came from, which a
// cached IR route implies.
func (t *gatewayTranslator) virtualHost(listener string, v *vhost) *ir.VirtualHost {
	key := t.gw.Namespace + "/" + t.gw.Name + "/" + listener + "/" + v.domain
	c := t.cache
	if old, ok := c.vhosts[key]; ok && old.fingerprint == v.fingerprint && old.n == v.n {
		c.freshVhosts[key] = old
		return old.vh
	}
	entries := make([]entry, 0, v.n)
	for _, a := range v.adds {
		for i, rs := range a.rules {
			for _, r := range rs {
				entries = append(entries, entry{route: r, created: a.meta.CreationTimestamp, namespace: a.meta.Namespace, name: a.meta.Name, rule: i})
			}
		}
	}
	slices.SortStableFunc(entries, precedence)
	vh := &ir.VirtualHost{Name: v.domain, Domains: []string{v.domain}, Routes: make([]*ir.Route, len(entries))}
	for i, e := range entries {
		vh.Routes[i] = e.route
	}
	c.freshVhosts[key] = &sortedVhost{fingerprint: v.fingerprint, n: v.n, vh: vh}
	return vh
}

// routeHash maps an IR route's identity to 64 well-mixed bits (splitmix64
// of its address), so that a virtual host's routes hash to their sum in any
// order.
func routeHash(r *ir.Route) uint64 {
	x := uint64(uintptr(unsafe.Pointer(r))) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// precedence orders routes as the Gateway API says (HTTPRouteRule): exact
// paths, then (an Isobar choice) regular expressions, then prefixes, longer
// first; then routes with a method; more headers; more query parameters;
// then the older route, then by namespace and name, then rule order.
func precedence(a, b entry) int {
	ma, mb := &a.route.Match, &b.route.Match
	return cmp.Or(
		cmp.Compare(pathRank(ma.PathType), pathRank(mb.PathType)),
		-cmp.Compare(len(ma.Path), len(mb.Path)),
		-cmp.Compare(boolRank(ma.Method != ""), boolRank(mb.Method != "")),
		-cmp.Compare(len(ma.Headers), len(mb.Headers)),
		-cmp.Compare(len(ma.QueryParams), len(mb.QueryParams)),
		a.created.Compare(b.created.Time),
		strings.Compare(a.namespace, b.namespace),
		strings.Compare(a.name, b.name),
		cmp.Compare(a.rule, b.rule),
	)
}

func pathRank(p ir.PathMatchType) int {
	switch p {
	case ir.PathExact:
		return 0
	case ir.PathRegex:
		return 1
	default:
		return 2
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
