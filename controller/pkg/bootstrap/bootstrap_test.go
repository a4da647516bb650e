package bootstrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"isobar.dev/controller/pkg/xdscheck"
)

func config(t *testing.T) Config {
	return Config{
		NodeID:        "web-isobar-envoy-abcde",
		Cluster:       "default/web",
		XDSAddress:    "web-isobar-controller.default.svc",
		XDSServerName: "web-isobar-controller.default.svc",
		CertsDir:      "/var/run/isobar/certs",
		OutputDir:     t.TempDir(),
		MaxHeapBytes:  900 << 20,
	}
}

// What `bootstrap` writes is what Envoy would accept: every message passes
// its validation rules, Anys included, and the files it refers to are the
// ones it wrote.
func TestWrite(t *testing.T) {
	c := config(t)
	if err := Write(c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.OutputDir, BootstrapFile))
	if err != nil {
		t.Fatal(err)
	}
	b := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(data, b); err != nil {
		t.Fatalf("envoy.json does not decode: %v", err)
	}
	if err := xdscheck.Validate(b); err != nil {
		t.Fatalf("bootstrap is invalid: %v", err)
	}
	if b.GetNode().GetId() != c.NodeID || b.GetAdmin().GetAddress().GetSocketAddress().GetAddress() != "127.0.0.1" {
		t.Errorf("node %v, admin %v", b.GetNode(), b.GetAdmin())
	}
	if b.GetOverloadManager() == nil {
		t.Error("no overload manager although MaxHeapBytes is set")
	}
	for _, name := range []string{sdsCertificateFile, sdsValidationCtxFile} {
		path := filepath.Join(c.OutputDir, name)
		if !strings.Contains(string(data), path) {
			t.Errorf("envoy.json does not refer to %s", path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		resp := &discoveryv3.DiscoveryResponse{}
		if err := protojson.Unmarshal(raw, resp); err != nil {
			t.Fatalf("%s does not decode: %v", name, err)
		}
		if err := xdscheck.Validate(resp); err != nil {
			t.Errorf("%s is invalid: %v", name, err)
		}
		secret := &tlsv3.Secret{}
		if err := resp.Resources[0].UnmarshalTo(secret); err != nil || !strings.HasPrefix(secret.Name, "isobar_xds_") {
			t.Errorf("%s holds %v (%v)", name, secret, err)
		}
		if !strings.Contains(string(raw), c.CertsDir) {
			t.Errorf("%s does not read from %s", name, c.CertsDir)
		}
	}
	for _, leftover := range []string{BootstrapFile + ".tmp"} {
		if _, err := os.Stat(filepath.Join(c.OutputDir, leftover)); err == nil {
			t.Errorf("%s left behind", leftover)
		}
	}
}

func TestBuildRefusesIncompleteConfig(t *testing.T) {
	c := config(t)
	c.XDSAddress, c.NodeID = "", ""
	_, _, err := Build(c)
	if err == nil || !strings.Contains(err.Error(), "xDS address is required") || !strings.Contains(err.Error(), "node id is required") {
		t.Errorf("Build = %v, want errors naming the missing fields", err)
	}
	c = config(t)
	c.MaxHeapBytes = 0
	b, _, err := Build(c)
	if err != nil || b.GetOverloadManager() != nil {
		t.Errorf("without MaxHeapBytes: %v, overload manager %v", err, b.GetOverloadManager())
	}
}
