package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"isobar.dev/api/fleet"
	"isobar.dev/controller/pkg/bootstrap"
	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdsserver"
	"isobar.dev/e2e/harness"
	"isobar.dev/operator/pkg/certs"
)

// gatewayWithLimit is a Gateway whose HTTP listener on port redirects
// every request, under a profile that limits each listener to limit
// connections.
func gatewayWithLimit(port, limit int) string {
	return fmt.Sprintf(`apiVersion: isobar.dev/v1alpha1
kind: ContourDeployment
metadata: {name: limited, namespace: default}
spec:
  runtimeSettings:
    listener: {maxConnectionsPerListener: %d}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: isobar}
spec:
  controllerName: isobar.dev/gateway-controller
  parametersRef: {group: isobar.dev, kind: ContourDeployment, namespace: default, name: limited}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: isobar
  listeners:
  - {name: http, protocol: HTTP, port: %d}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: moved, namespace: default}
spec:
  parentRefs: [{name: web}]
  rules:
  - filters:
    - type: RequestRedirect
      requestRedirect: {hostname: elsewhere.example, statusCode: 301}
`, limit, port)
}

// translated is what the controller serves for the Gateway of
// gatewayWithLimit.
func translated(t *testing.T, port, limit int) *xds.Resources {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(path, []byte(gatewayWithLimit(port, limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := offline.TranslateFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.XDS) != 1 {
		t.Fatalf("%d Gateways translated, want 1", len(r.XDS))
	}
	return r.XDS[0]
}

// xdsFleet serves an xDS server over mutual TLS, as the controller does,
// and starts a simulated Envoy from a bootstrap that package bootstrap
// wrote, as the init container does; every address the bootstrap names
// reaches the server.
func xdsFleet(t *testing.T) (*xdsserver.Server, *Envoy) {
	t.Helper()
	now := time.Now()
	caCert, caKey, err := certs.NewCA("xds", now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(sub, name string, data []byte) string {
		p := filepath.Join(dir, sub, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const serverName = "web-isobar-controller.default.svc"
	for _, side := range []struct {
		sub    string
		names  []string
		server bool
	}{{"server", []string{serverName}, true}, {"client", []string{"envoy"}, false}} {
		cert, key, err := certs.Issue(caCert, caKey, side.names, side.server, now)
		if err != nil {
			t.Fatal(err)
		}
		write(side.sub, fleet.CertKey, cert)
		write(side.sub, fleet.KeyKey, key)
		write(side.sub, fleet.CAKey, caCert)
	}
	serverTLS, err := xdsserver.ServerTLS(filepath.Join(dir, "server", fleet.CertKey), filepath.Join(dir, "server", fleet.KeyKey), filepath.Join(dir, "server", fleet.CAKey))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := xdsserver.New(ctx, xdsserver.Options{})
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); cancel() })

	out := filepath.Join(dir, "bootstrap")
	if err := bootstrap.Write(bootstrap.Config{NodeID: "envoy-0", Cluster: "default/web", XDSAddress: serverName, XDSServerName: serverName,
		CertsDir: filepath.Join(dir, "client"), OutputDir: out}); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBootstrap(filepath.Join(out, bootstrap.BootstrapFile), func(p string) string { return p })
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	toServer := func(ctx context.Context, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", lis.Addr().String())
	}
	e, err := Start(b, toServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	e.Serve("127.0.0.1", d.DialContext)
	return srv, e
}

// holdConnection opens a connection to the listener and asks one request
// on it, keeping it open; it reports whether Envoy answered, or closed the
// connection instead.
func holdConnection(t *testing.T, addr string) (net.Conn, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n")); err != nil {
		return c, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, false
	}
	resp.Body.Close()
	return c, resp.StatusCode == http.StatusMovedPermanently
}

// The profile's maxConnectionsPerListener reaches Envoy in the runtime
// layer the controller serves over RTDS, which Envoy asks for, and waits
// for, before it asks for clusters and listeners. Envoy then closes a
// listener's connections beyond the limit as it accepts them, and a new
// limit holds for new connections without a new listener.
func TestListenerConnectionLimitFromRuntime(t *testing.T) {
	port := harness.FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	srv, e := xdsFleet(t)

	// Served everything but the runtime layer, Envoy asks for nothing
	// else: it waits for the layer.
	withoutRuntime := *translated(t, port, 2)
	withoutRuntime.Runtimes = nil
	if _, err := srv.Update(&withoutRuntime); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Changed():
		t.Fatalf("Envoy applied a response before its runtime layer came: %v", e.Resources(resourcev3.ListenerType))
	case <-time.After(500 * time.Millisecond):
	}
	if ok, err := e.Synced(); ok || err != nil {
		t.Fatalf("synced %v (%v) before the runtime layer came", ok, err)
	}

	if _, err := srv.Update(translated(t, port, 2)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e)
	var held []net.Conn
	for i := range 2 {
		c, ok := holdConnection(t, addr)
		if !ok {
			t.Fatalf("connection %d of 2 was not served", i+1)
		}
		held = append(held, c)
	}
	if _, ok := holdConnection(t, addr); ok {
		t.Fatal("a third connection was served over a limit of 2")
	}
	held[0].Close()
	waitServed(t, addr, "a connection after one of 2 closed")

	// A higher limit comes as the runtime layer alone.
	changed, err := srv.Update(translated(t, port, 3))
	if err != nil {
		t.Fatal(err)
	}
	if changed != 1 {
		t.Errorf("%d resources pushed for a new limit, want the runtime layer alone", changed)
	}
	waitServed(t, addr, "a third connection under a limit of 3")
}

func waitReady(t *testing.T, e *Envoy) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !e.Ready(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_, err := e.Synced()
			t.Fatalf("Envoy not ready: %v", err)
		}
	}
}

// waitServed waits until a new connection to addr is served and held.
func waitServed(t *testing.T, addr, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := holdConnection(t, addr); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not served", what)
		}
	}
}
