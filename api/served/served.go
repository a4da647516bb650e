// Package served tells which API kinds the API server serves, and at which
// versions. Both binaries watch Gateway API kinds at one version each, and
// a cluster may have installed only some of their CRDs, or another release
// of them: an informer of a kind the server does not serve never syncs, so
// each binary asks discovery first and watches only what is served.
package served

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Set holds the kinds served at the version asked for.
type Set map[schema.GroupVersionKind]bool

// Missing lists the kinds of want that s does not hold, in want's order.
func (s Set) Missing(want []schema.GroupVersionKind) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, gvk := range want {
		if !s[gvk] {
			out = append(out, gvk)
		}
	}
	return out
}

// Kinds asks discovery which of want the API server serves.
func Kinds(dc discovery.DiscoveryInterface, want []schema.GroupVersionKind) (Set, error) {
	byVersion := map[schema.GroupVersion]map[string]bool{}
	set := Set{}
	for _, gvk := range want {
		gv := gvk.GroupVersion()
		kinds, ok := byVersion[gv]
		if !ok {
			var err error
			if kinds, err = kindsAt(dc, gv); err != nil {
				return nil, err
			}
			byVersion[gv] = kinds
		}
		if kinds[gvk.Kind] {
			set[gvk] = true
		}
	}
	return set, nil
}

// Await is Kinds, asked again until the API server answers or ctx ends: a
// binary started while the API server is away (a control plane upgrade, a
// network partition, a node restarting everything at once) waits for it
// instead of exiting into a restart loop whose back-off outlasts the
// outage. A refusal (401, 403) is a configuration error and returned at
// once. Each failed attempt is logged with the wait before the next one,
// which doubles from a second to 16 seconds.
func Await(ctx context.Context, dc discovery.DiscoveryInterface, want []schema.GroupVersionKind, log logr.Logger) (Set, error) {
	wait := time.Second
	for {
		set, err := Kinds(dc, want)
		if err == nil || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
			return set, err
		}
		log.Info("the API server does not answer; waiting for it", "error", err.Error(), "retryIn", wait.String())
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the API server: %w", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 16*time.Second)
	}
}

// kindsAt lists the kinds of one group version; none when it is not served.
func kindsAt(dc discovery.DiscoveryInterface, gv schema.GroupVersion) (map[string]bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", gv, err)
	}
	kinds := map[string]bool{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") { // not a subresource
			kinds[r.Kind] = true
		}
	}
	return kinds, nil
}

// Why says, for the log, why a kind is not served at its version: at which
// other versions of its group it is served, if any.
func Why(dc discovery.DiscoveryInterface, gvk schema.GroupVersionKind) string {
	msg := fmt.Sprintf("%s is not served at %s", gvk.Kind, gvk.GroupVersion())
	groups, err := dc.ServerGroups()
	if err != nil {
		return msg
	}
	var other []string
	for _, g := range groups.Groups {
		if g.Name != gvk.Group {
			continue
		}
		for _, v := range g.Versions {
			if kinds, err := kindsAt(dc, schema.GroupVersion{Group: g.Name, Version: v.Version}); err == nil && kinds[gvk.Kind] {
				other = append(other, v.Version)
			}
		}
	}
	if len(other) == 0 {
		return msg + ": its CRD is not installed"
	}
	slices.Sort(other)
	return msg + fmt.Sprintf(" but at %s: the installed CRD is of another release", strings.Join(other, ", "))
}

// Watcher ends its binary's serving when the kinds of Want that the API
// server serves are no longer Have (a CRD installed, upgraded or removed),
// checking every Interval; discovery errors are retried. A binary sets its
// watches up once, so it exits with the error and its Pod restarts,
// watching what is served then. It is a controller-runtime Runnable that
// runs on every replica.
type Watcher struct {
	Discovery discovery.DiscoveryInterface
	Want      []schema.GroupVersionKind
	Have      Set
	Interval  time.Duration
}

// Start checks until ctx ends (nil) or the served kinds change (an error).
func (w *Watcher) Start(ctx context.Context) error {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, err := Kinds(w.Discovery, w.Want)
		if err != nil {
			continue
		}
		if !maps.Equal(now, w.Have) {
			return fmt.Errorf("the API kinds the cluster serves changed (missing before: %v, now: %v); restarting to watch them", w.Have.Missing(w.Want), now.Missing(w.Want))
		}
	}
}

// NeedLeaderElection is false: every replica watches what it serves from.
func (*Watcher) NeedLeaderElection() bool { return false }
