// Package fleetreport lets the replicas of a Gateway's control plane tell
// the leader about the Envoys connected to them. The Envoy Service spreads
// a fleet's Envoys over every replica, each replica serves xDS to its own,
// but only the leader writes status, and Programmed speaks for the whole
// fleet: without the other replicas' reports the leader would call a fleet
// unconnected (or acknowledged) by looking at half of it.
//
// Each replica keeps one Lease in the Gateway's namespace, renewed
// periodically and on every change, holding its report in an annotation.
// A Lease not renewed within its duration is a replica that is gone.
package fleetreport

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// LabelGateway marks a report's Lease with the name of the Gateway
	// (or leader election ID) whose replicas report.
	LabelGateway = "isobar.dev/fleet-report"
	// annotationReport holds the report as JSON.
	annotationReport = "isobar.dev/fleet-report"
)

// Report is one replica's view of the Envoys connected to it.
type Report struct {
	// Replica is the reporting replica's Pod name.
	Replica string `json:"-"`
	// Connected counts the Envoys streaming from the replica.
	Connected int `json:"connected"`
	// Acknowledged says every one of them acknowledged what the replica
	// serves.
	Acknowledged bool `json:"acknowledged"`
	// Holding counts those that hold the configuration of Generation (or a
	// newer one): a change in flight or an Envoy joining does not lower
	// it. Nil in the report of a replica of a release before it, whose
	// Envoys then hold it when Acknowledged says so.
	Holding *int `json:"holding,omitempty"`
	// Rejections are Envoys' messages for configuration they rejected.
	Rejections []string `json:"rejections,omitempty"`
	// Generation is the Gateway's generation in the configuration the
	// replica serves: a replica that has not translated the Gateway the
	// leader reports on has not programmed it.
	Generation int64 `json:"generation"`
}

// Publisher keeps a replica's report Lease up to date.
type Publisher struct {
	Client client.Client
	// Lease is the report's Lease: one per replica.
	Lease types.NamespacedName
	// Group is the LabelGateway value the replicas of one control plane
	// share.
	Group   string
	Replica string
	// Period is how often the Lease is renewed when nothing changes; it
	// expires after three periods.
	Period time.Duration
	// Report reads the replica's current report.
	Report func() Report
	// Changes signals that Report may have changed.
	Changes <-chan struct{}
}

// Start publishes until ctx ends, then deletes the Lease so that the
// leader stops counting a replica that is going away.
func (p *Publisher) Start(ctx context.Context) error {
	tick := time.NewTicker(p.Period)
	defer tick.Stop()
	var last string
	var renewed time.Time
	for {
		data, err := json.Marshal(p.Report())
		if err != nil {
			return err
		}
		// Renewal keeps the Lease alive; a change is published at once.
		if string(data) != last || time.Since(renewed) >= p.Period {
			if err := p.publish(ctx, string(data)); err != nil {
				if ctx.Err() != nil {
					break
				}
				// The next tick retries; a replica that cannot reach the
				// API server is a replica the leader stops counting.
				last = ""
			} else {
				last, renewed = string(data), time.Now()
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		case <-p.Changes:
			continue
		}
		break
	}
	gone, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: p.Lease.Namespace, Name: p.Lease.Name}}
	return client.IgnoreNotFound(p.Client.Delete(gone, lease))
}

// NeedLeaderElection is false: every replica reports.
func (p *Publisher) NeedLeaderElection() bool { return false }

func (p *Publisher) publish(ctx context.Context, report string) error {
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(3 * p.Period / time.Second)
	lease := &coordinationv1.Lease{}
	err := p.Client.Get(ctx, p.Lease, lease)
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: p.Lease.Namespace, Name: p.Lease.Name,
				Labels:      map[string]string{LabelGateway: p.Group},
				Annotations: map[string]string{annotationReport: report},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &p.Replica, LeaseDurationSeconds: &seconds, RenewTime: &now},
		}
		return p.Client.Create(ctx, lease)
	}
	if err != nil {
		return err
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotationReport] = report
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &p.Replica, &seconds, &now
	return p.Client.Update(ctx, lease)
}

// Others lists the live reports of a group's replicas other than self,
// ordered by replica.
func Others(ctx context.Context, r client.Reader, namespace, group, self string, now time.Time) ([]Report, error) {
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{LabelGateway: group}); err != nil {
		return nil, fmt.Errorf("listing the replicas' fleet reports: %w", err)
	}
	var out []Report
	for _, l := range leases.Items {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if holder == self || holder == "" || expired(l.Spec, now) {
			continue
		}
		rep := Report{}
		if err := json.Unmarshal([]byte(l.Annotations[annotationReport]), &rep); err != nil {
			// Not a report we can read: a replica of another version
			// cannot be vouched for.
			rep = Report{Connected: 1, Rejections: []string{fmt.Sprintf("replica %s: unreadable fleet report: %v", holder, err)}}
		}
		rep.Replica = holder
		out = append(out, rep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Replica < out[j].Replica })
	return out, nil
}

func expired(s coordinationv1.LeaseSpec, now time.Time) bool {
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}

// Fleet is the whole fleet's state as the leader judges it at generation:
// its own report and the others'.
type Fleet struct {
	Connected int
	// Holding counts the Envoys that serve the Gateway's generation.
	Holding      int
	Acknowledged bool
	Rejections   []string
	// Behind names the replicas with connected Envoys that serve an
	// older generation of the Gateway.
	Behind []string
}

// Combine judges the fleet from every replica's report.
func Combine(own Report, others []Report, generation int64) Fleet {
	f := Fleet{Acknowledged: true}
	for _, r := range append([]Report{own}, others...) {
		f.Connected += r.Connected
		switch {
		case r.Holding != nil:
			f.Holding += *r.Holding
		case r.Acknowledged:
			f.Holding += r.Connected
		}
		f.Acknowledged = f.Acknowledged && r.Acknowledged
		f.Rejections = append(f.Rejections, r.Rejections...)
		if r.Connected > 0 && r.Generation < generation {
			f.Behind = append(f.Behind, r.Replica)
		}
	}
	return f
}
