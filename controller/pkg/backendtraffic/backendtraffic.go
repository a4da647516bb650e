// Package backendtraffic evaluates XBackendTrafficPolicies (the Gateway
// API's experimental channel, GEP-3388): for each Service, the retry
// budget Envoy keeps on its clusters, the sessions its rules keep, and the
// policy's conditions. Policies are evaluated once per translation;
// clusters are built on every translation, and take the budget of their
// Service's policy then; route rules read the session through an env.Env,
// which records the read.
package backendtraffic

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/envoyversion"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/routerule"
)

// A Policy is an XBackendTrafficPolicy as it applies to one Service.
type Policy struct {
	Object *gatewayxv1alpha1.XBackendTrafficPolicy
	// Budget is the retry budget of the Service's clusters; nil when the
	// policy sets none or is not accepted.
	Budget *ir.RetryBudget
	// Session is how the rules whose one backend is the Service keep
	// sessions, when they say nothing of their own; nil when the policy
	// sets none or is not accepted.
	Session    *gatewayv1.SessionPersistence
	Conditions condition.Policy
	// Losers are newer policies for the same Service: Conflicted, reported
	// to the same Gateways as this one.
	Losers []*Policy
}

// The Gateway API's defaults for a retry constraint (the CRD sets them on
// a cluster; a file read offline may not).
const (
	defaultPercent     = 20
	defaultInterval    = 10 * time.Second
	defaultMinRetries  = 10
	defaultMinInterval = time.Second
)

// Evaluate returns the policies that apply, by Service. Of two policies
// for one Service the older applies and the newer is Conflicted, as the
// Policy Attachment GEP orders them (creation, then namespace/name).
func Evaluate(policies []*gatewayxv1alpha1.XBackendTrafficPolicy) map[types.NamespacedName]*Policy {
	policies = slices.Clone(policies)
	slices.SortFunc(policies, func(a, b *gatewayxv1alpha1.XBackendTrafficPolicy) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	out := map[types.NamespacedName]*Policy{}
	for _, p := range policies {
		bp := &Policy{Object: p, Conditions: condition.Policy{Generation: p.Generation}}
		if err := bp.read(); err != nil {
			bp.Budget, bp.Session = nil, nil
			bp.Conditions.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, err.Error())
		}
		// The first condition set stays: read's, else this one.
		bp.Conditions.Set(gatewayv1.PolicyConditionAccepted, true, gatewayv1.PolicyReasonAccepted, "Policy is accepted")
		for _, ref := range p.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" {
				continue
			}
			k := types.NamespacedName{Namespace: p.Namespace, Name: string(ref.Name)}
			if older, taken := out[k]; taken && older.Object != p {
				loser := *bp
				loser.Budget, loser.Session, loser.Conditions = nil, nil, condition.Policy{Generation: p.Generation}
				loser.Conditions.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonConflicted,
					fmt.Sprintf("XBackendTrafficPolicy %s/%s, which is older, already applies to Service %s", older.Object.Namespace, older.Object.Name, ref.Name))
				older.Losers = append(older.Losers, &loser)
				continue
			}
			out[k] = bp
		}
	}
	return out
}

// read reads the policy's retry constraint and session persistence.
func (p *Policy) read() error {
	spec := &p.Object.Spec
	for _, ref := range spec.TargetRefs {
		if ref.Group != "" || ref.Kind != "Service" {
			return fmt.Errorf("targetRefs: %s %s of group %q is not supported; target a core Service", ref.Kind, ref.Name, ref.Group)
		}
	}
	if sp := spec.SessionPersistence; sp != nil {
		if err := routerule.CheckSession(sp); err != nil {
			return err
		}
		p.Session = sp
	}
	if err := p.readRetries(); err != nil {
		return err
	}
	if p.Session != nil && p.Budget == nil {
		p.Conditions.Set(gatewayv1.PolicyConditionAccepted, true, gatewayv1.PolicyReasonAccepted,
			"Policy is accepted: the route rules whose one backendRef is the Service keep sessions, unless they set sessionPersistence themselves")
	}
	return nil
}

// readRetries reads the policy's retry constraint.
func (p *Policy) readRetries() error {
	rc := p.Object.Spec.RetryConstraint
	if rc == nil {
		return nil
	}
	b := &ir.RetryBudget{Percent: defaultPercent, Interval: defaultInterval, MinRetries: defaultMinRetries}
	minInterval := defaultMinInterval
	if d := rc.Budget; d != nil {
		if d.Percent != nil {
			if *d.Percent < 0 || *d.Percent > 100 {
				return fmt.Errorf("retryConstraint.budget.percent %d is not between 0 and 100", *d.Percent)
			}
			b.Percent = *d.Percent
		}
		if d.Interval != nil {
			v, err := routerule.ParseDuration("retryConstraint.budget.interval", *d.Interval)
			if err != nil {
				return err
			}
			if v < time.Second || v > time.Hour {
				return fmt.Errorf("retryConstraint.budget.interval %s is not between 1s and 1h", v)
			}
			b.Interval = v
		}
	}
	if r := rc.MinRetryRate; r != nil {
		if r.Count != nil {
			if *r.Count < 1 || *r.Count > 1000000 {
				return fmt.Errorf("retryConstraint.minRetryRate.count %d is not between 1 and 1000000", *r.Count)
			}
			b.MinRetries = uint32(*r.Count)
		}
		if r.Interval != nil {
			v, err := routerule.ParseDuration("retryConstraint.minRetryRate.interval", *r.Interval)
			if err != nil {
				return err
			}
			if v <= 0 || v > time.Hour {
				return fmt.Errorf("retryConstraint.minRetryRate.interval %s is not above 0s and at most 1h", v)
			}
			minInterval = v
		}
	}
	// Envoy's budget keeps a minimum of retries in flight at once, not a
	// rate: count retries an interval, each taking about a second at
	// most, are count×1s/interval in flight (at least one).
	b.MinRetries = max(1, uint32(int64(b.MinRetries)*int64(time.Second)/int64(minInterval)))
	p.Budget = b
	// An Envoy older than the budget's interval is served the budget
	// without it (envoyversion): the status says what such an Envoy
	// counts.
	older := ""
	if since := envoyversion.Since(budgetInterval); envoyrelease.Oldest.Less(since) {
		older = fmt.Sprintf(" (Envoy before v%d.%d: of the requests active at once)", since.Major, since.Minor)
	}
	p.Conditions.Set(gatewayv1.PolicyConditionAccepted, true, gatewayv1.PolicyReasonAccepted,
		fmt.Sprintf("Policy is accepted: Envoy allows retries up to %d%% of the requests of the last %s%s, and at least %d retries at once", b.Percent, b.Interval, older, b.MinRetries))
	return nil
}

// budgetInterval is the Envoy field the budget's interval sets.
var budgetInterval = (&clusterv3.CircuitBreakers_Thresholds_RetryBudget{}).ProtoReflect().Descriptor().Fields().ByName("budget_interval").FullName()

// SessionPersistence is the session the rules whose one backend is the
// policy's Service keep, when they set none.
func (p *Policy) SessionPersistence() *gatewayv1.SessionPersistence { return p.Session }

// Same reports whether rules read two evaluations alike: they read the
// session alone.
func (p *Policy) Same(o env.Evaluated) bool {
	q, ok := o.(*Policy)
	return ok && reflect.DeepEqual(p.Session, q.Session)
}

// Evaluated is the policies as an env.Index holds them.
func Evaluated(policies map[types.NamespacedName]*Policy) map[types.NamespacedName]env.Evaluated {
	out := make(map[types.NamespacedName]env.Evaluated, len(policies))
	for k, p := range policies {
		out[k] = p
	}
	return out
}
