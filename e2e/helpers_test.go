package e2e

import (
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/e2e/harness"
)

func keyOf(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func durationOf(d *metav1.Duration) any {
	if d == nil {
		return nil
	}
	return d.Duration
}

// waitReady waits for a process's /readyz, failing the test if it exits.
func waitReady(t *testing.T, proc *harness.Process, url string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, proc.Name+" "+url, func() bool {
		if exited, err := proc.Exited(); exited {
			t.Fatalf("%s exited: %v\n%s", proc.Name, err, proc.Output())
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
