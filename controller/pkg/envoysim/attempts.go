package envoysim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// defaultRouteTimeout is Envoy's route timeout when RouteAction.timeout is
// unset (route_components.proto).
const defaultRouteTimeout = 15 * time.Second

// Envoy's retry back-off when retry_back_off is unset: a 25 ms base and a
// maximum of ten times the base (router/config/route/v3: RetryBackOff).
const (
	defaultBackOffBase = 25 * time.Millisecond
	backOffMaxFactor   = 10
)

// Attempt is what one try at a backend came to.
type Attempt struct {
	// Status is the backend's response code, unless Reset.
	Status int
	// Reset: the backend dropped the connection before answering.
	Reset bool
	// Refused: there was no connection to the backend at all (a reset
	// before the request was sent, as Envoy counts it); Reset is set too.
	Refused bool
	// GRPCStatus is the grpc-status of an answer that has one in its
	// headers, "" otherwise.
	GRPCStatus string
	// Delay is how long the backend took to answer (or reset).
	Delay time.Duration
}

// Outcome is what the client gets once Envoy's timeouts and retries have
// played out.
type Outcome struct {
	Status int
	// FromEnvoy: Envoy answered itself (a timeout or a reset), with Body
	// saying why; otherwise the last attempt's answer is the client's.
	FromEnvoy bool
	Body      string
	// Attempts is how many tries the backend got.
	Attempts int
}

// Local replies of Envoy's router, with the bodies Envoy gives them.
var (
	TimedOut = Outcome{Status: 504, FromEnvoy: true, Body: "upstream request timeout"}
	// IdledOut is the connection manager's answer when the route's
	// idle_timeout passes without a response to send.
	IdledOut = Outcome{Status: 408, FromEnvoy: true, Body: "stream timeout"}
	WasReset = Outcome{Status: 503, FromEnvoy: true, Body: "upstream connect error or disconnect/reset before headers. reset reason: connection termination"}
)

// Retries are a forwarded request's route timeout and retry policy, as
// Envoy's router plays them.
type Retries struct {
	// Timeout covers every try and the back-off between them; 0 is none.
	Timeout time.Duration
	// Idle is the route's idle_timeout: the stream is idle until the
	// response starts, so it too bounds every try and the back-off, with
	// IdledOut instead of TimedOut; 0 is none.
	Idle time.Duration
	// PerTry is the retry policy's per_try_timeout; 0 is none.
	PerTry time.Duration
	// Max is how many retries the policy allows (0 without a policy).
	Max int
	// BackOffBase and BackOffMax space retries out.
	BackOffBase, BackOffMax time.Duration
	policy                  *routev3.RetryPolicy
}

func retriesOf(ra *routev3.RouteAction) (Retries, error) {
	r := Retries{Timeout: defaultRouteTimeout, policy: ra.GetRetryPolicy()}
	if ra.GetTimeout() != nil {
		r.Timeout = ra.GetTimeout().AsDuration()
	}
	r.Idle = ra.GetIdleTimeout().AsDuration()
	rp := r.policy
	if rp == nil {
		return r, nil
	}
	if err := understand(rp, "retry_on", "num_retries", "per_try_timeout", "retriable_status_codes", "retry_back_off"); err != nil {
		return r, err
	}
	for _, on := range strings.Split(rp.GetRetryOn(), ",") {
		if _, grpc := grpcRetryOn[on]; !grpc && !slices.Contains(httpRetryOn, on) {
			// Envoy ignores a condition it does not know: a retry the
			// configuration asks for would never happen.
			return r, fmt.Errorf("retry_on %q: unknown condition %q", rp.GetRetryOn(), on)
		}
	}
	r.Max = 1
	if rp.GetNumRetries() != nil {
		r.Max = int(rp.GetNumRetries().GetValue())
	}
	r.PerTry = rp.GetPerTryTimeout().AsDuration()
	r.BackOffBase = defaultBackOffBase
	if b := rp.GetRetryBackOff(); b != nil {
		if err := understand(b, "base_interval", "max_interval"); err != nil {
			return r, err
		}
		r.BackOffBase = b.GetBaseInterval().AsDuration()
		if b.GetMaxInterval() != nil {
			r.BackOffMax = b.GetMaxInterval().AsDuration()
		}
	}
	if r.BackOffMax == 0 {
		r.BackOffMax = backOffMaxFactor * r.BackOffBase
	}
	return r, nil
}

// Retries is the route's timeout and retry policy.
func (a *Answer) Retries() Retries { return a.retries }

// BackOff is how long Envoy waits before retry n (1 for the first): fully
// jittered exponential back-off, a random time below base*2^(n-1), at most
// the maximum.
func (r Retries) BackOff(n int) time.Duration {
	limit := r.BackOffBase << min(n-1, 30)
	if limit <= 0 || limit > r.BackOffMax {
		limit = r.BackOffMax
	}
	if limit <= 0 {
		return 0
	}
	return rand.N(limit)
}

// Deadline is how long the router may take before Envoy answers itself,
// and its answer then: the route's timeout (504) or, when shorter, its
// idle timeout (408); 0 for no limit.
func (r Retries) Deadline() (time.Duration, Outcome) {
	if r.Idle > 0 && (r.Timeout == 0 || r.Idle < r.Timeout) {
		return r.Idle, IdledOut
	}
	return r.Timeout, TimedOut
}

// Retriable is whether retry_on covers a try's failure: a status, a reset,
// or a try that outlasted per_try_timeout (router/config/route/v3
// x-envoy-retry-on).
func (r Retries) Retriable(at Attempt, timedOut bool) bool {
	rp := r.policy
	if rp == nil {
		return false
	}
	dropped := at.Reset || timedOut
	for _, on := range strings.Split(rp.GetRetryOn(), ",") {
		on = strings.TrimSpace(on)
		if code, ok := grpcRetryOn[on]; ok {
			if !dropped && at.GRPCStatus == code {
				return true
			}
			continue
		}
		switch on {
		case "connect-failure", "reset-before-request":
			if at.Refused {
				return true
			}
		case "5xx":
			if dropped || at.Status >= 500 {
				return true
			}
		case "gateway-error":
			if dropped || at.Status == 502 || at.Status == 503 || at.Status == 504 {
				return true
			}
		case "reset":
			if dropped {
				return true
			}
		case "retriable-4xx":
			if !dropped && at.Status == 409 {
				return true
			}
		case "retriable-status-codes":
			if !dropped && slices.Contains(rp.GetRetriableStatusCodes(), uint32(at.Status)) {
				return true
			}
		}
	}
	return false
}

// httpRetryOn are the HTTP retry_on conditions (x-envoy-retry-on).
var httpRetryOn = []string{"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure",
	"envoy-ratelimited", "retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers",
	"http3-post-connect-failure"}

// grpcRetryOn are the gRPC retry_on conditions and the grpc-status each
// retries (router filter, x-envoy-retry-grpc-on).
var grpcRetryOn = map[string]string{
	"cancelled":          "1",
	"deadline-exceeded":  "4",
	"resource-exhausted": "8",
	"internal":           "13",
	"unavailable":        "14",
}

// Play runs a forwarded request as Envoy's router does, on time that is
// counted rather than waited for (explain and the offline tests; the
// simulated data plane waits): try asks the backend (attempt counts from
// 0); a try that outlasts the per_try_timeout is abandoned; one that
// retry_on covers is retried while the policy allows; and whatever
// outlasts the route's timeout, retries included, is answered 504 by
// Envoy. Back-off between retries is not counted.
func (a *Answer) Play(try func(attempt int) Attempt) Outcome {
	r := a.retries
	var elapsed time.Duration
	for n := 0; ; n++ {
		at := try(n)
		took, tryTimedOut := at.Delay, false
		if r.PerTry > 0 && took > r.PerTry {
			took, tryTimedOut = r.PerTry, true
		}
		if limit, o := r.Deadline(); limit > 0 && elapsed+took > limit {
			return attempts(o, n+1)
		}
		elapsed += took
		out := Outcome{Status: at.Status, Attempts: n + 1}
		switch {
		case tryTimedOut:
			out = attempts(TimedOut, n+1)
		case at.Reset:
			out = attempts(WasReset, n+1)
		}
		if n >= r.Max || !r.Retriable(at, tryTimedOut) {
			return out
		}
	}
}

func attempts(o Outcome, n int) Outcome {
	o.Attempts = n
	return o
}
