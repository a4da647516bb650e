package engine

import (
	"cmp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Age is what orders routes of one source among equal matches: the older
// first, then by namespace and name. It is copied out of an object's
// metadata so that sorting thousands compares values without chasing
// pointers.
type Age struct {
	created         int64
	nanos           int32
	namespace, name string
}

// AgeOf returns the age of a route object.
func AgeOf(meta *metav1.ObjectMeta) Age {
	t := meta.CreationTimestamp.Time
	return Age{created: t.Unix(), nanos: int32(t.Nanosecond()), namespace: meta.Namespace, name: meta.Name}
}

// CompareAges orders the older first.
func CompareAges(a, b Age) int {
	return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.nanos, b.nanos),
		strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
}

// CompareRoutes is CompareAges for route objects.
func CompareRoutes(a, b *metav1.ObjectMeta) int {
	if a == b {
		return 0
	}
	return CompareAges(AgeOf(a), AgeOf(b))
}
