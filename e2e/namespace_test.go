package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/e2e/harness"
)

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	ctx, cancel := harness.Context()
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "-",
	}}
	if len(ns.GenerateName) > 50 {
		ns.GenerateName = ns.GenerateName[:50]
	}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := harness.Context()
		defer cancel()
		_ = env.Client.Delete(ctx, ns)
	})
	return ns.Name
}
