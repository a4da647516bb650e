package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// make demo's acceptance: on the test assets alone, the sample Gateway
// becomes Programmed and the simulated Envoy routes the sample requests,
// with the controller's usual ports (8000, 8001, 8003) on 127.0.0.1 taken
// by something else, as a developer's machine may have them.
func TestDemo(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set; make test sets it")
	}
	for _, port := range []string{"8000", "8001", "8003"} {
		if l, err := net.Listen("tcp", "127.0.0.1:"+port); err == nil {
			defer l.Close()
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), &out, true, 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Programmed               True",
		"address 192.0.2.10 (from the SIMULATED load balancer)",
		"Service             web-isobar-envoy (LoadBalancer: 80->64592/TCP, 443->64955/TCP, 8443->8443/TCP)",
		"PodDisruptionBudget web-isobar-envoy (maxUnavailable 1)",
		"cluster default/api/8080 (weight 90/100)",
		"cluster default/api-canary/8080 (weight 10/100)",
		"https_443 / app.example.com / httproute/default/app/rule/1/match/0: cluster default/frontend/80",
		"tls_8443: cluster default/db/5432",
		"http_80: Envoy answers 404",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's report lacks %q:\n%s", want, out.String())
		}
	}
}
