package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"isobar.dev/e2e/harness"
)

// The live controller draws what it serves at /debug/graph on its metrics
// address, as Contour's /debug/dag: the Gateway, its listener, the route
// and the Service it sends to, and a new route once it is attached.
func TestServeDebugGraph(t *testing.T) {
	ctx, cancel := harness.Context()
	defer cancel()
	ns, _, s := appFleet(t, ctx)
	url := strings.TrimSuffix(s.metrics, "/metrics") + "/debug/graph"
	drawn := func() string {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/vnd.graphviz") {
			t.Fatalf("%s: %s %s\n%s", url, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		return string(body)
	}
	for _, want := range []string{"digraph", "Gateway " + ns + "/web", "http HTTP:80", "HTTPRoute " + ns + "/app", "Service " + ns + "/app"} {
		if got := drawn(); !strings.Contains(got, want) {
			t.Errorf("the graph has no %q:\n%s", want, got)
		}
	}
	create(t, ctx, httpRoute(ns, "more", "app", "web"))
	eventually(t, 30*time.Second, "the new route in the graph", func() bool {
		return strings.Contains(drawn(), "HTTPRoute "+ns+"/more")
	})
}
