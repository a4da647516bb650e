package envoysim

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestPlay(t *testing.T) {
	failing := func(n int, fail Attempt, then Attempt) func(int) Attempt {
		return func(i int) Attempt {
			if i < n {
				return fail
			}
			return then
		}
	}
	ok := Attempt{Status: 200}
	slow := Attempt{Status: 200, Delay: time.Second}
	codes := &routev3.RetryPolicy{RetryOn: "reset,retriable-status-codes", NumRetries: wrapperspb.UInt32(3), RetriableStatusCodes: []uint32{500}}
	for _, tc := range []struct {
		name     string
		action   *routev3.RouteAction
		try      func(int) Attempt
		status   int
		envoy    bool
		attempts int
	}{
		{"an answer within the default timeout", &routev3.RouteAction{}, failing(0, ok, slow), 200, false, 1},
		{"the default route timeout is 15s", &routev3.RouteAction{}, failing(0, ok, Attempt{Status: 200, Delay: 16 * time.Second}), 504, true, 1},
		{"a route timeout cuts a slow answer", &routev3.RouteAction{Timeout: durationpb.New(500 * time.Millisecond)}, failing(0, ok, slow), 504, true, 1},
		{"a zero timeout disables it", &routev3.RouteAction{Timeout: durationpb.New(0)}, failing(0, ok, Attempt{Status: 200, Delay: time.Hour}), 200, false, 1},
		{"a per-try timeout without retries", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "reset", NumRetries: wrapperspb.UInt32(0), PerTryTimeout: durationpb.New(500 * time.Millisecond)}},
			failing(0, ok, slow), 504, true, 1},
		{"a per-try timeout is retried under reset", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "reset", PerTryTimeout: durationpb.New(500 * time.Millisecond)}},
			failing(1, slow, ok), 200, false, 2},
		{"retried status codes until one succeeds", &routev3.RouteAction{RetryPolicy: codes}, failing(2, Attempt{Status: 500}, ok), 200, false, 3},
		{"the last failure when retries run out", &routev3.RouteAction{RetryPolicy: codes}, failing(4, Attempt{Status: 500}, ok), 500, false, 4},
		{"a code the policy does not name is not retried", &routev3.RouteAction{RetryPolicy: codes}, failing(2, Attempt{Status: 503}, ok), 503, false, 1},
		{"a reset is retried under reset", &routev3.RouteAction{RetryPolicy: codes}, failing(1, Attempt{Reset: true}, ok), 200, false, 2},
		{"an unretried reset is Envoy's 503", &routev3.RouteAction{}, failing(1, Attempt{Reset: true}, ok), 503, true, 1},
		{"num_retries defaults to one", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "5xx"}}, failing(2, Attempt{Status: 502}, ok), 502, false, 2},
		{"a gRPC condition retries its grpc-status", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "unavailable"}},
			failing(1, Attempt{Status: 200, GRPCStatus: "14"}, ok), 200, false, 2},
		{"a gRPC condition leaves other statuses", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "unavailable"}},
			failing(1, Attempt{Status: 200, GRPCStatus: "13"}, ok), 200, false, 1},
		{"connect-failure retries a refused connection", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "connect-failure"}},
			failing(1, Attempt{Reset: true, Refused: true}, ok), 200, false, 2},
		{"connect-failure leaves a reset after connecting", &routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "connect-failure"}},
			failing(1, Attempt{Reset: true}, ok), 503, true, 1},
		{"retries count against the route timeout", &routev3.RouteAction{Timeout: durationpb.New(1500 * time.Millisecond), RetryPolicy: codes},
			failing(2, Attempt{Status: 500, Delay: time.Second}, ok), 504, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Answer
			var err error
			if a.retries, err = retriesOf(tc.action); err != nil {
				t.Fatal(err)
			}
			out := a.Play(tc.try)
			if out.Status != tc.status || out.FromEnvoy != tc.envoy || out.Attempts != tc.attempts {
				t.Errorf("got status %d from Envoy %t after %d attempts, want %d, %t, %d", out.Status, out.FromEnvoy, out.Attempts, tc.status, tc.envoy, tc.attempts)
			}
		})
	}
}

// An unknown retry_on condition is an error: Envoy would ignore it, and
// the retry it names would never happen.
func TestUnknownRetryOn(t *testing.T) {
	if _, err := retriesOf(&routev3.RouteAction{RetryPolicy: &routev3.RetryPolicy{RetryOn: "5xx,sometimes"}}); err == nil {
		t.Error("retry_on \"sometimes\" accepted")
	}
}
