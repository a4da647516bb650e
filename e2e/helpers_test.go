package e2e

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
