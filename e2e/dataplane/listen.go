package dataplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
)

// NetworkDialer connects to an address ("tcp" or "udp") as the Pod's
// network would: Envoy dials its endpoints' addresses and ports as EDS
// gives them.
type NetworkDialer func(ctx context.Context, network, address string) (net.Conn, error)

// Serve makes the Envoy a network proxy on host (its Pod's address): it
// listens on the port of every listener it was sent, as Envoy binds its
// listeners, and handles each connection or datagram as its configuration
// says, reaching backends through upstream. It stops at Stop.
func (e *Envoy) Serve(host string, upstream NetworkDialer) {
	p := &proxy{envoy: e, host: host, upstream: upstream, open: map[string]func(){}, http: map[uint32]*httpListener{}}
	p.health = &health{p: p}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.stopServing = func() {
		cancel()
		p.closeAll()
	}
	e.listening = p.bound
	e.mu.Unlock()
	go p.run(ctx)
}

// bound says whether the ports of the state whose change channel is given
// are bound (or failed to bind, as Envoy reports such a listener).
func (p *proxy) bound(state <-chan struct{}) bool {
	p.syncedMu.Lock()
	defer p.syncedMu.Unlock()
	return p.synced == state
}

// proxy is a simulated Envoy's data plane.
type proxy struct {
	envoy    *Envoy
	host     string
	upstream NetworkDialer

	// synced is the change channel of the state whose ports sync bound
	// last. Its own lock: Ready reads it holding the Envoy's.
	syncedMu sync.Mutex
	synced   <-chan struct{}

	mu sync.Mutex
	// open are the sockets bound, by "tcp/port" or "udp/port", with their
	// close.
	open map[string]func()
	// http are the HTTP servers of the listeners, by port.
	http map[uint32]*httpListener
	// health checks the endpoints of the clusters that say so.
	health *health
	// limits are the clusters' circuit breakers.
	limits limits
	// keySets are the JWKS fetched, by cluster and URI.
	keySets map[string]cachedJWKS
	// conns counts each TCP listener's open connections, by name, for
	// its connection limit. Its own lock: a connection gives its place
	// back as it closes, which closing a listener under mu does.
	connsMu sync.Mutex
	conns   map[string]uint64
}

func (p *proxy) run(ctx context.Context) {
	for {
		changed := p.envoy.Changed()
		p.sync(ctx)
		p.syncedMu.Lock()
		p.synced = changed
		p.syncedMu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// sync binds the ports of the listeners there are and closes those of
// listeners gone.
func (p *proxy) sync(ctx context.Context) {
	sim, err := p.envoy.Simulator()
	if err != nil {
		return
	}
	p.health.sync(ctx, sim)
	want := map[string]bool{}
	for network, ports := range sim.Ports() {
		for _, port := range ports {
			key := network + "/" + strconv.Itoa(int(port))
			want[key] = true
			p.mu.Lock()
			_, bound := p.open[key]
			p.mu.Unlock()
			if bound {
				continue
			}
			stop, err := p.listen(ctx, network, port)
			if err != nil {
				fmt.Fprintf(os.Stderr, "simulated Envoy %s: %v\n", p.envoy.Node().GetId(), err)
				continue
			}
			p.mu.Lock()
			p.open[key] = stop
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, stop := range p.open {
		if !want[key] {
			stop()
			delete(p.open, key)
		}
	}
}

func (p *proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, stop := range p.open {
		stop()
		delete(p.open, key)
	}
	for port, h := range p.http {
		h.close()
		delete(p.http, port)
	}
}

func (p *proxy) listen(ctx context.Context, network string, port uint32) (func(), error) {
	return Bind(network, net.JoinHostPort(p.host, strconv.Itoa(int(port))),
		func(c net.Conn) { p.accept(ctx, c, port) },
		func(pc net.PacketConn) { p.serveUDP(ctx, pc, port) })
}

// Bind listens on addr: a "tcp" socket hands each connection to conn (in
// a goroutine of its own), a "udp" socket is handed to packets. The
// returned function closes the socket.
func Bind(network, addr string, conn func(net.Conn), packets func(net.PacketConn)) (func(), error) {
	if network == "udp" {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, err
		}
		go packets(pc)
		return func() { _ = pc.Close() }, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go conn(c)
		}
	}()
	return func() { _ = l.Close() }, nil
}

// accept is Envoy's accept of a TCP connection: over the listener's
// connection limit (its runtime key, read as each connection comes) the
// connection is closed at once, before any listener filter reads it;
// otherwise it counts against the limit until it closes.
func (p *proxy) accept(ctx context.Context, c net.Conn, port uint32) {
	sim, err := p.envoy.Simulator()
	if err != nil {
		c.Close()
		return
	}
	name, err := sim.ListenerName(port)
	if err != nil {
		c.Close()
		return
	}
	limit, limited := p.envoy.listenerConnectionLimit(name)
	p.connsMu.Lock()
	if limited && p.conns[name] >= limit {
		p.connsMu.Unlock()
		p.logf("listener %s: connection limit %d reached, closing a new connection (downstream_cx_overflow)", name, limit)
		c.Close()
		return
	}
	if p.conns == nil {
		p.conns = map[string]uint64{}
	}
	p.conns[name]++
	p.connsMu.Unlock()
	p.serveConn(ctx, &countedConn{Conn: c, release: func() {
		p.connsMu.Lock()
		defer p.connsMu.Unlock()
		p.conns[name]--
	}}, port)
}

// countedConn gives its place under the listener's limit back when it
// closes, once.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
