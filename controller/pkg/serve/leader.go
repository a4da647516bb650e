package serve

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaderLock is the leader election's Lease. Its holder is the replica's
// Pod name when the Pod's environment gives it (POD_NAME): a restarted
// container then takes its own Lease back at once, instead of leaving
// status unwritten until the Lease expires, and a holder can be told
// gone when its Pod is (goneLeader). Without a Pod name it is the host
// name and a unique suffix, as controller-runtime's default, since
// several processes may share a host.
func leaderLock(cfg *rest.Config, lease types.NamespacedName, podName string, events resourcelock.EventRecorder) (resourcelock.Interface, error) {
	identity := podName
	if identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		identity = host + "_" + string(uuid.NewUUID())
	}
	c := rest.CopyConfig(cfg)
	// One hung request must not cost the leadership (client-go's own
	// heuristic).
	c.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(c, "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, lease.Namespace, lease.Name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: events})
}

// leaderEvents records the leader election's Events ("<replica> became
// leader", on the Lease) through the manager's recorder, as
// controller-runtime's own lock does. The lock is made before the manager,
// which makes the recorder, so it is set once the manager exists; Events
// before that are not recorded.
type leaderEvents struct {
	mu sync.Mutex
	r  record.EventRecorder
}

func (e *leaderEvents) set(r record.EventRecorder) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.r = r
}

func (e *leaderEvents) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	e.mu.Lock()
	r := e.r
	e.mu.Unlock()
	if r != nil {
		r.Eventf(obj, eventType, reason, message, args...)
	}
}

// goneLeader frees the leader Lease of a replica whose Pod no longer
// exists. A controller killed with its Pod (a node failure, a forced
// deletion) never releases its Lease, and the Lease is held long
// (leaseDuration) so that a leader on a saturated API server keeps it:
// without this, no replica would write status for that long after the
// leader's Pod went. Every replica that is not the leader looks every
// retryPeriod; the leader election then takes the freed Lease on its next
// try. A holder that is not a Pod name (an identity with "_", which Pod
// names cannot have: a replica of an earlier release, or one without
// POD_NAME) is left alone.
type goneLeader struct {
	reader  client.Reader
	writer  client.Client
	lease   types.NamespacedName
	self    string
	elected <-chan struct{}
	log     logr.Logger
}

// NeedLeaderElection is false: it runs on the replicas that are not the
// leader.
func (g *goneLeader) NeedLeaderElection() bool { return false }

func (g *goneLeader) Start(ctx context.Context) error {
	tick := time.NewTicker(retryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.elected:
			return nil
		case <-tick.C:
			if err := g.check(ctx); err != nil {
				// Not allowed to read Pods (a Role of an earlier
				// release): the Lease expires as before.
				g.log.Info("cannot tell whether the leader's Pod is gone; its Lease frees only when it expires", "error", err.Error())
				return nil
			}
		}
	}
}

// check frees the leader Lease when its holder's Pod is gone; an error
// only when Pods cannot be read.
func (g *goneLeader) check(ctx context.Context) error {
	lease := &coordinationv1.Lease{}
	if err := g.reader.Get(ctx, g.lease, lease); err != nil {
		return nil // none yet, or the API server is away: try again
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" || holder == g.self || strings.Contains(holder, "_") {
		return nil
	}
	err := g.reader.Get(ctx, types.NamespacedName{Namespace: g.lease.Namespace, Name: holder}, &corev1.Pod{})
	switch {
	case apierrors.IsForbidden(err):
		return err
	case !apierrors.IsNotFound(err):
		return nil
	}
	// Only the Lease as read: a replica that took it meanwhile keeps it.
	uid, version := lease.UID, lease.ResourceVersion
	if err := g.writer.Delete(ctx, lease, client.Preconditions{UID: &uid, ResourceVersion: &version}); err == nil {
		g.log.Info("the leader's Pod is gone: its Lease is freed for another replica", "leader", holder)
	}
	return nil
}
