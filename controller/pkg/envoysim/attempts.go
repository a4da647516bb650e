package envoysim

import (
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// defaultRouteTimeout is Envoy's route timeout when RouteAction.timeout is
// unset (route_components.proto).
const defaultRouteTimeout = 15 * time.Second

// Attempt is what one try at a backend came to.
type Attempt struct {
	// Status is the backend's response code, unless Reset.
	Status int
	// Reset: the backend dropped the connection before answering.
	Reset bool
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

// timeouts are a forwarded request's route timeout (0: none) and retry
// policy (nil: no retries, no per-try timeout).
type timeouts struct {
	route time.Duration
	retry *routev3.RetryPolicy
}

func timeoutsOf(ra *routev3.RouteAction) (timeouts, error) {
	t := timeouts{route: defaultRouteTimeout, retry: ra.GetRetryPolicy()}
	if ra.GetTimeout() != nil {
		t.route = ra.GetTimeout().AsDuration()
	}
	if t.retry != nil {
		// retry_back_off only spaces retries out (25 ms and up); the
		// simulation does not count that time against the timeouts.
		if err := understand(t.retry, "retry_on", "num_retries", "per_try_timeout", "retriable_status_codes", "retry_back_off"); err != nil {
			return t, err
		}
	}
	return t, nil
}

// Play runs a forwarded request as Envoy's router does: try asks the
// backend (attempt counts from 0); a try that outlasts the retry policy's
// per_try_timeout is abandoned; one that the policy's retry_on covers is
// retried while num_retries allow (one when unset); and whatever outlasts
// the route's timeout, retries included, is answered 504 by Envoy.
func (a *Answer) Play(try func(attempt int) Attempt) Outcome {
	t := a.timeouts
	retries := 0
	var perTry time.Duration
	if rp := t.retry; rp != nil {
		retries = 1
		if rp.GetNumRetries() != nil {
			retries = int(rp.GetNumRetries().GetValue())
		}
		perTry = rp.GetPerTryTimeout().AsDuration()
	}
	var elapsed time.Duration
	for n := 0; ; n++ {
		at := try(n)
		took, tryTimedOut := at.Delay, false
		if perTry > 0 && took > perTry {
			took, tryTimedOut = perTry, true
		}
		if t.route > 0 && elapsed+took > t.route {
			return Outcome{Status: 504, FromEnvoy: true, Body: "upstream request timeout", Attempts: n + 1}
		}
		elapsed += took
		out := Outcome{Status: at.Status, Attempts: n + 1}
		switch {
		case tryTimedOut:
			out = Outcome{Status: 504, FromEnvoy: true, Body: "upstream request timeout", Attempts: n + 1}
		case at.Reset:
			out = Outcome{Status: 503, FromEnvoy: true, Body: "upstream connect error or disconnect/reset before headers. reset reason: connection termination", Attempts: n + 1}
		}
		if n >= retries || !retriable(t.retry, at, tryTimedOut) {
			return out
		}
	}
}

// retriable is whether retry_on covers an attempt's failure
// (router/config/route/v3 x-envoy-retry-on).
func retriable(rp *routev3.RetryPolicy, at Attempt, timedOut bool) bool {
	dropped := at.Reset || timedOut
	for _, on := range strings.Split(rp.GetRetryOn(), ",") {
		switch strings.TrimSpace(on) {
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
