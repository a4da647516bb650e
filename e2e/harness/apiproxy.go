package harness

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// APIProxy stands between processes under test and the API server, so a
// test can take the API server away from those processes alone (and give
// it back on the same address) while the test itself, and the rest of the
// cluster, keep using it.
type APIProxy struct {
	t      testing.TB
	env    *Env
	addr   string
	target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
}

// NewAPIProxy starts a proxy to e's API server, up; it goes down when the
// test ends.
func NewAPIProxy(t testing.TB, e *Env) *APIProxy {
	t.Helper()
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &APIProxy{t: t, env: e, target: u.Host, conns: map[net.Conn]bool{}}
	p.Up()
	t.Cleanup(p.Down)
	return p
}

// Kubeconfig writes a kubeconfig like Env.Kubeconfig's for user, but
// through the proxy.
func (p *APIProxy) Kubeconfig(user string) string {
	p.t.Helper()
	path, err := p.env.Kubeconfig(user)
	if err != nil {
		p.t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.addr
	}
	out := filepath.Join(p.t.TempDir(), "proxied.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		p.t.Fatal(err)
	}
	return out
}

// Up listens (again, on the same address after Down) and forwards.
func (p *APIProxy) Up() {
	p.t.Helper()
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.l, p.addr = l, l.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *APIProxy) forward(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.l == nil {
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); u.Close() }()
	_, _ = io.Copy(c, u)
	c.Close()
}

// Down stops listening and cuts every open connection.
func (p *APIProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}
