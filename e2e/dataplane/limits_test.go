package dataplane

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
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
			port := freePort(t)
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
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				ready := held >= tc.held && len(overloaded) >= turnedAway
				mu.Unlock()
				if ready || time.Now().After(deadline) {
					break
				}
			}
			mu.Lock()
			close(release)
			mu.Unlock()
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
