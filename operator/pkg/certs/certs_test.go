package certs

import (
	"testing"
	"time"
)

func TestIssueAndRenew(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	caCert, caKey, err := NewCA("web fleet CA", now)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"web-isobar-controller.default.svc"}
	server, _, err := Issue(caCert, caKey, names, true, now)
	if err != nil {
		t.Fatal(err)
	}
	if !SignedBy(server, caCert, names, now) {
		t.Error("the server certificate does not verify against its CA")
	}
	if SignedBy(server, caCert, []string{"other.default.svc"}, now) {
		t.Error("the server certificate verifies for a name it lacks")
	}
	otherCA, _, err := NewCA("other", now)
	if err != nil {
		t.Fatal(err)
	}
	if SignedBy(server, otherCA, names, now) {
		t.Error("the server certificate verifies against another CA")
	}
	renew := RenewAt(server)
	if got, want := renew.Sub(now), LeafLifetime*2/3-time.Hour/3; got < want-time.Minute || got > want+time.Minute {
		t.Errorf("renewal after %s, want about %s", got, want)
	}
	if SignedBy(server, caCert, names, now.Add(LeafLifetime+time.Hour)) {
		t.Error("an expired certificate verifies")
	}
	if !RenewAt([]byte("garbage")).IsZero() {
		t.Error("garbage does not ask for renewal now")
	}
	if _, _, err := Issue(caCert, []byte("not a key"), names, false, now); err == nil {
		t.Error("issued with a broken CA key")
	}
}
