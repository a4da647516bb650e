package envoysim

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestSessionHost(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, value, want string
	}{
		{"address", b64("10.0.0.1:80"), "10.0.0.1:80"},
		{"json", b64(`{"address":"10.0.0.2:80","expires":1800000060}`), "10.0.0.2:80"},
		{"json without expiry", b64(`{"address":"10.0.0.2:80"}`), "10.0.0.2:80"},
		{"expired", b64(`{"address":"10.0.0.2:80","expires":1799999999}`), ""},
		{"not base64", "10.0.0.1:80", ""},
		{"broken json", b64(`{"address":`), ""},
	} {
		if got := sessionHost(tc.value, now); got != tc.want {
			t.Errorf("%s: sessionHost(%q) = %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}
}

// A session's endpoint is kept only while it is healthy: then the load
// balancer picks, and the response moves the session.
func TestSessionFollowsHealth(t *testing.T) {
	b := &Backend{Endpoints: []string{"10.0.0.1:80", "10.0.0.2:80"},
		Session: &Session{Header: "x-session", Host: "10.0.0.2:80"}}
	if got := b.PickHealthy(0, func(string) bool { return true }); got != "10.0.0.2:80" {
		t.Fatalf("healthy: picked %s, want the session's 10.0.0.2:80", got)
	}
	if h := b.ClientHeaders("10.0.0.2:80"); len(h) != 0 {
		t.Errorf("the session's endpoint: response headers %v, want none", h)
	}
	got := b.PickHealthy(0, func(e string) bool { return e != "10.0.0.2:80" })
	if got != "10.0.0.1:80" {
		t.Fatalf("unhealthy: picked %s, want 10.0.0.1:80", got)
	}
	h := b.ClientHeaders(got)
	if len(h) != 1 || h[0].Name != "x-session" || h[0].Value != base64.StdEncoding.EncodeToString([]byte(got)) {
		t.Errorf("moved session: response headers %v, want x-session naming %s", h, got)
	}
}
