package dataplane

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/e2e/harness"
)

// A cluster's circuit breakers turn away, with 503 and x-envoy-overloaded,
// what goes over its limits at once: requests over max requests; tries
// over max connections wait as pending requests, and those over max
// pending requests are turned away.
func TestCircuitBreakers(t *testing.T) {
	var mu sync.Mutex
	var release chan struct{}
	held := 0
	slow := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			mu.Lock()
			held++
			wait := release
			mu.Unlock()
			<-wait
		}
		w.WriteHeader(http.StatusOK)
	})
	for _, tc := range []struct {
		name       string
		thresholds *clusterv3.CircuitBreakers_Thresholds
		want       []int // the statuses of three requests at once, sorted
		// held is how many reach the backend while it holds them.
		held int
	}{
		{"max requests", &clusterv3.CircuitBreakers_Thresholds{MaxRequests: wrapperspb.UInt32(2)}, []int{200, 200, 503}, 2},
		{"max connections and pending", &clusterv3.CircuitBreakers_Thresholds{MaxConnections: wrapperspb.UInt32(1), MaxPendingRequests: wrapperspb.UInt32(1)}, []int{200, 200, 503}, 1},
		{"Envoy's defaults", nil, []int{200, 200, 200}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := backendCluster(t, slow, false)
			if tc.thresholds != nil {
				c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{tc.thresholds}}
			}
			port := harness.FreePort(t)
			staticEnvoy(t, httpListenerOn(t, port, 10*time.Second), c)
			get(t, port, "/") // the listener is bound and the backend answers
			mu.Lock()
			release, held = make(chan struct{}), 0
			mu.Unlock()
			var got []int
			var overloaded []string
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/hold")
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					got = append(got, resp.StatusCode)
					if resp.StatusCode == 503 {
						overloaded = append(overloaded, resp.Header.Get("X-Envoy-Overloaded"))
					}
				}()
			}
			// The turned away are answered at once, while the backend
			// holds the others; then it lets them go.
			turnedAway := 0
			for _, st := range tc.want {
				if st == 503 {
					turnedAway++
				}
			}
			letGo(&mu, release, func() bool { return held >= tc.held && len(overloaded) >= turnedAway })
			wg.Wait()
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("three requests at once: %v, want %v", got, tc.want)
			}
			for _, h := range overloaded {
				if h != "true" {
					t.Errorf("a 503 without x-envoy-overloaded: true (%q)", h)
				}
			}
		})
	}
}

// A retry budget bounds the retries at once: four requests whose first
// try fails (503) are retried, the retries held by the backend; a budget
// of 0% with a minimum of two lets two retries go and answers the other
// two with their try's 503, a budget of 100% retries all four, and without
// a budget Envoy's three retries at once apply.
func TestRetryBudget(t *testing.T) {
	var mu sync.Mutex
	var release chan struct{}
	seen := map[string]bool{}
	held := 0
	be := backend(t, func(p *http.Protocols) { p.SetHTTP1(true) }, func(w http.ResponseWriter, r *http.Request) {
		client := r.Header.Get("X-Client")
		mu.Lock()
		first := !seen[client]
		seen[client] = true
		if first {
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		held++
		wait := release
		mu.Unlock()
		<-wait
		w.WriteHeader(http.StatusOK)
	})
	for _, tc := range []struct {
		name   string
		budget *clusterv3.CircuitBreakers_Thresholds_RetryBudget
		want   []int // the statuses of four requests at once, sorted
	}{
		{"a minimum of two", &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 0}, MinRetryConcurrency: wrapperspb.UInt32(2)}, []int{200, 200, 503, 503}},
		{"all of the requests", &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 100}, MinRetryConcurrency: wrapperspb.UInt32(1)}, []int{200, 200, 200, 200}},
		{"Envoy's max retries", nil, []int{200, 200, 200, 503}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := backendCluster(t, be, false)
			if tc.budget != nil {
				c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{RetryBudget: tc.budget}}}
			}
			port := harness.FreePort(t)
			staticEnvoy(t, retryingListener(t, port), c)
			mu.Lock()
			release, seen = make(chan struct{}), map[string]bool{}
			close(release)
			mu.Unlock()
			get(t, port, "/ready") // bound: the first try fails, its retry goes through
			mu.Lock()
			release, held, seen = make(chan struct{}), 0, map[string]bool{}
			mu.Unlock()
			var got []int
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/", nil)
					if err != nil {
						t.Error(err)
						return
					}
					req.Header.Set("X-Client", strconv.Itoa(i))
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					got = append(got, resp.StatusCode)
				}()
			}
			retried := 0
			for _, st := range tc.want {
				if st == 200 {
					retried++
				}
			}
			// The retries not made are answered at once, while the
			// backend holds the others; then it lets them go.
			letGo(&mu, release, func() bool { return held >= retried && len(got) >= 4-retried })
			wg.Wait()
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("four requests at once, each retried once: %v, want %v", got, tc.want)
			}
		})
	}
}

// retryingListener is httpListenerOn's listener whose route retries a 503
// once.
func retryingListener(t *testing.T, port int) *listenerv3.Listener {
	l := httpListenerOn(t, port, 10*time.Second)
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	action := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()[0].GetRoute()
	action.RetryPolicy = &routev3.RetryPolicy{RetryOn: "retriable-status-codes", RetriableStatusCodes: []uint32{503}, NumRetries: wrapperspb.UInt32(1)}
	l.FilterChains[0].Filters[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: typed(t, hcm)}
	return l
}

// letGo waits, up to ten seconds, until ready says (under mu) that the
// backend holds what it should and the others are answered, then closes
// release (under mu) to let the held requests go.
func letGo(mu *sync.Mutex, release chan struct{}, ready func() bool) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := ready()
		mu.Unlock()
		if done {
			break
		}
	}
	mu.Lock()
	close(release)
	mu.Unlock()
}
