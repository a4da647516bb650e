package drain

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// envoyAdmin stands in for Envoy's admin interface: it records the calls
// and reports open connections that close one per poll.
type envoyAdmin struct {
	mu    sync.Mutex
	calls []string
	open  atomic.Int32
}

func (e *envoyAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.calls = append(e.calls, r.Method+" "+r.URL.RequestURI())
	e.mu.Unlock()
	if r.URL.Path == "/stats" {
		n := e.open.Load()
		if n > 0 {
			e.open.Add(-1)
		}
		fmt.Fprintf(w, "listener.0.0.0.0_64592.downstream_cx_active: %d\nlistener.admin.downstream_cx_active: 1\n", n)
	}
}

func TestDrainWaitsForConnections(t *testing.T) {
	admin := &envoyAdmin{}
	admin.open.Store(3)
	srv := httptest.NewServer(admin)
	defer srv.Close()
	h := NewHandler(Options{Admin: strings.TrimPrefix(srv.URL, "http://"), Gradual: true, MinDuration: 50 * time.Millisecond, Timeout: 10 * time.Second, Poll: 10 * time.Millisecond})
	hook := httptest.NewServer(h)
	defer hook.Close()
	resp, err := http.Get(hook.URL + "/shutdown")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if len(admin.calls) < 5 || admin.calls[0] != "POST /healthcheck/fail" || admin.calls[1] != "POST /drain_listeners?graceful" {
		t.Errorf("calls %v: want the health check failed, then a graceful drain, then polls until no connection is open", admin.calls)
	}
	if admin.open.Load() != 0 {
		t.Errorf("returned with %d connections open", admin.open.Load())
	}
}

func TestDrainTimesOut(t *testing.T) {
	admin := &envoyAdmin{}
	admin.open.Store(1 << 30)
	srv := httptest.NewServer(admin)
	defer srv.Close()
	h := NewHandler(Options{Admin: strings.TrimPrefix(srv.URL, "http://"), Timeout: 100 * time.Millisecond, Poll: 10 * time.Millisecond})
	start := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/shutdown", nil))
	if rec.Code != http.StatusOK || time.Since(start) > 5*time.Second {
		t.Errorf("status %d after %s: want the hook to return once the timeout passed", rec.Code, time.Since(start))
	}
}

func TestDrainReportsAnUnreachableAdmin(t *testing.T) {
	h := NewHandler(Options{Admin: "127.0.0.1:1", Timeout: time.Second})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/shutdown", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "healthcheck/fail") {
		t.Errorf("status %d %q", rec.Code, rec.Body.String())
	}
}
