package dataplane

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"

	"isobar.dev/e2e/harness"
)

// v2Header is a PROXY protocol v2 header for a TCP connection from src.
func v2Header(src net.IP, cmd byte) []byte {
	b := append([]byte{}, proxyV2Signature...)
	if ip4 := src.To4(); ip4 != nil {
		b = append(b, 0x20|cmd, 0x11, 0, 12)
		b = append(b, ip4...)
		b = append(b, 10, 0, 0, 1, 0xdc, 0x05, 0x01, 0xbb)
		return b
	}
	b = append(b, 0x20|cmd, 0x21, 0, 36)
	b = append(b, src.To16()...)
	b = append(b, net.ParseIP("2001:db8::1").To16()...)
	return binary.BigEndian.AppendUint32(b, 0xdc0501bb)
}

// A listener with the PROXY protocol filter takes the client's address
// from the header a load balancer sends first, v1 or v2, serves what
// follows it, and closes a connection that does not start with one.
func TestProxyProtocol(t *testing.T) {
	echo := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	port := harness.FreePort(t)
	l := httpListenerOn(t, port, time.Second)
	l.ListenerFilters = []*listenerv3.ListenerFilter{{
		Name: "envoy.filters.listener.proxy_protocol", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(t, &proxyprotocolv3.ProxyProtocol{})},
	}}
	e := staticEnvoy(t, l, backendCluster(t, echo, false))
	for _, tc := range []struct {
		name   string
		header []byte
		client string // the address Envoy sees, "" for the connection's own
		closed bool
	}{
		{"v1", []byte("PROXY TCP4 203.0.113.9 10.0.0.1 56324 80\r\n"), "203.0.113.9", false},
		{"v1 IPv6", []byte("PROXY TCP6 2001:db8::9 2001:db8::1 56324 80\r\n"), "2001:db8::9", false},
		{"v1 unknown", []byte("PROXY UNKNOWN\r\n"), "", false},
		{"v2", v2Header(net.ParseIP("198.51.100.7"), 1), "198.51.100.7", false},
		{"v2 IPv6", v2Header(net.ParseIP("2001:db8::7"), 1), "2001:db8::7", false},
		{"v2 local", v2Header(net.ParseIP("198.51.100.7"), 0), "", false},
		{"none", nil, "", true},
		{"garbage", []byte("PROXY TCP4 nonsense\r\n"), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
			for i := 0; err != nil && i < 100; i++ {
				time.Sleep(20 * time.Millisecond)
				c, err = net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write(append(tc.header, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"...))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if tc.closed {
				if err == nil {
					t.Errorf("status %d, want the connection closed", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("after the header: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Errorf("%d %q, want 200 from the backend", resp.StatusCode, body)
			}
			if got := e.lastClient(); tc.client != "" && got != tc.client || tc.client == "" && !strings.HasPrefix(got, "127.0.0.1") {
				t.Errorf("Envoy saw the client as %q, want %q", got, tc.client)
			}
		})
	}
}
