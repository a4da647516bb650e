package dataplane

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
)

// httpListener hands the connections an HTTP connection manager takes to
// one http.Server, which speaks HTTP/1.1 and HTTP/2 as Envoy's AUTO codec
// does: by ALPN on TLS, by the HTTP/2 preface (prior knowledge) on plain
// text.
type httpListener struct {
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	server *http.Server
	// info is what Envoy knows of each connection the server holds.
	info sync.Map // net.Conn -> *downstream
}

type connInfoKey struct{}

func (p *proxy) serveHTTP(conn net.Conn, d *downstream) {
	p.mu.Lock()
	h := p.http[d.port]
	if h == nil {
		h = &httpListener{conns: make(chan net.Conn), done: make(chan struct{})}
		var protocols http.Protocols
		protocols.SetHTTP1(true)
		protocols.SetHTTP2(true)
		protocols.SetUnencryptedHTTP2(true)
		h.server = &http.Server{
			Handler:   &httpHandler{proxy: p},
			Protocols: &protocols,
			ErrorLog:  log.New(io.Discard, "", 0),
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				if d, ok := h.info.Load(c); ok {
					return context.WithValue(ctx, connInfoKey{}, d)
				}
				return ctx
			},
			ConnState: func(c net.Conn, s http.ConnState) {
				if s == http.StateClosed || s == http.StateHijacked {
					h.info.Delete(c)
				}
			},
		}
		go func() { _ = h.server.Serve(h) }()
		p.http[d.port] = h
	}
	p.mu.Unlock()
	h.info.Store(conn, d)
	select {
	case h.conns <- conn:
	case <-h.done:
		conn.Close()
	}
}

// Accept, Close and Addr make httpListener the server's net.Listener.
func (h *httpListener) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, errors.New("listener closed")
	}
}

func (h *httpListener) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *httpListener) Addr() net.Addr { return &net.TCPAddr{} }

func (h *httpListener) close() {
	_ = h.Close()
	_ = h.server.Close()
}
