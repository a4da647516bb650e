package e2e

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// apiProxy stands between a process under test and the API server, so a
// test can take the API server away from that process alone (and give it
// back on the same address) while the test itself keeps using it.
type apiProxy struct {
	t      *testing.T
	addr   string
	target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
}

func newAPIProxy(t *testing.T) *apiProxy {
	t.Helper()
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{t: t, target: u.Host, conns: map[net.Conn]bool{}}
	p.up()
	t.Cleanup(p.down)
	return p
}

// kubeconfig writes a kubeconfig like the harness's but through the proxy.
func (p *apiProxy) kubeconfig(user string) string {
	p.t.Helper()
	path, err := env.Kubeconfig(user)
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

// up listens (again, on the same address after down) and forwards.
func (p *apiProxy) up() {
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

func (p *apiProxy) forward(c net.Conn) {
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

// down stops listening and cuts every open connection.
func (p *apiProxy) down() {
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
