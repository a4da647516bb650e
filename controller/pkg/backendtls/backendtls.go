// Package backendtls evaluates BackendTLSPolicies: for each Service port,
// the TLS Envoy originates to it and the policy's conditions. Policies are
// evaluated once per translation, into the env.Index, and route rules read
// the evaluation of the Service port they use through an env.Env, which
// records the read.
package backendtls

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// A Policy is a BackendTLSPolicy as it applies to one Service (and port
// name, "" for every port).
type Policy struct {
	Object *gatewayv1.BackendTLSPolicy
	// TLS is nil when the policy is not usable, and Problem says why.
	TLS        *ir.UpstreamTLS
	Problem    *Problem
	Conditions condition.Policy
	// Losers are newer policies for the same Service port; their
	// Conflicted status goes to the same Gateways as this one's.
	Losers []*Policy
}

// Evaluate returns what evaluates the policies once per translation. When
// two policies target the same Service port, the older one applies and the
// newer is Conflicted, as the Gateway API orders policies.
func Evaluate(policies []*gatewayv1.BackendTLSPolicy) env.EvaluateFunc {
	return func(e env.Env) map[env.PolicyKey]env.Evaluated {
		return evaluate(policies, e)
	}
}

func evaluate(policies []*gatewayv1.BackendTLSPolicy, e env.Env) map[env.PolicyKey]env.Evaluated {
	policies = slices.Clone(policies)
	slices.SortFunc(policies, func(a, b *gatewayv1.BackendTLSPolicy) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
			strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	applied := map[env.PolicyKey]*Policy{}
	for _, p := range policies {
		bt := &Policy{Object: p, Conditions: condition.Policy{Generation: p.Generation}}
		bt.TLS, bt.Problem = evaluatePolicy(p, e, &bt.Conditions)
		for _, ref := range p.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" {
				continue
			}
			k := env.PolicyKey{Service: types.NamespacedName{Namespace: p.Namespace, Name: string(ref.Name)}, Port: sectionName(ref.SectionName)}
			if older, taken := applied[k]; taken && older.Object != p {
				older.Losers = append(older.Losers, bt)
				bt.Conditions.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonConflicted,
					fmt.Sprintf("BackendTLSPolicy %s/%s, which is older, already applies to Service %s", older.Object.Namespace, older.Object.Name, ref.Name))
				continue
			}
			applied[k] = bt
		}
		bt.Conditions.Set(gatewayv1.PolicyConditionAccepted, true, gatewayv1.PolicyReasonAccepted, "Policy is accepted")
		bt.Conditions.Set(gatewayv1.BackendTLSPolicyConditionResolvedRefs, true, gatewayv1.BackendTLSPolicyReasonResolvedRefs, "All references are resolved")
	}
	out := make(map[env.PolicyKey]env.Evaluated, len(applied))
	for k, bt := range applied {
		out[k] = bt
	}
	return out
}

// evaluatePolicy resolves a policy's CA certificates and names.
func evaluatePolicy(p *gatewayv1.BackendTLSPolicy, e env.Env, conds *condition.Policy) (*ir.UpstreamTLS, *Problem) {
	t, problem := Resolve(e, p.Namespace, p.Spec.Validation)
	if problem != nil {
		conds.Set(gatewayv1.PolicyConditionAccepted, false, problem.Accepted, problem.Message)
		if problem.ResolvedRefs != "" {
			conds.Set(gatewayv1.BackendTLSPolicyConditionResolvedRefs, false, problem.ResolvedRefs, problem.Message)
		}
	}
	return t, problem
}

// A Problem is why a validation cannot be met: the reason for a policy's
// Accepted condition and, when a reference is at fault, for its
// ResolvedRefs.
type Problem struct {
	Accepted, ResolvedRefs gatewayv1.PolicyConditionReason
	Message                string
}

// Resolve resolves a validation's CA certificates, in namespace ns, and
// names: a BackendTLSPolicy's, and an XBackend's, which shares its type.
func Resolve(e env.Env, ns string, v gatewayv1.BackendTLSPolicyValidation) (*ir.UpstreamTLS, *Problem) {
	t := &ir.UpstreamTLS{SNI: string(v.Hostname)}
	invalid := func(msg string) (*ir.UpstreamTLS, *Problem) {
		return nil, &Problem{Accepted: gatewayv1.PolicyReasonInvalid, Message: msg}
	}
	unresolved := func(reason gatewayv1.PolicyConditionReason, msg string) (*ir.UpstreamTLS, *Problem) {
		return nil, &Problem{Accepted: gatewayv1.BackendTLSPolicyReasonNoValidCACertificate, ResolvedRefs: reason, Message: msg}
	}
	if err := validate.Hostname(t.SNI, false); err != nil {
		return invalid("validation.hostname: " + err.Error())
	}
	switch {
	case v.WellKnownCACertificates != nil && len(v.CACertificateRefs) > 0:
		return invalid("set caCertificateRefs or wellKnownCACertificates, not both")
	case v.WellKnownCACertificates != nil:
		if *v.WellKnownCACertificates != gatewayv1.WellKnownCACertificatesSystem {
			return invalid(fmt.Sprintf("wellKnownCACertificates %q is not supported; use System", *v.WellKnownCACertificates))
		}
		t.SystemCA = true
	case len(v.CACertificateRefs) == 0:
		return invalid("set caCertificateRefs or wellKnownCACertificates")
	}
	var bundle bytes.Buffer
	for _, ref := range v.CACertificateRefs {
		name := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
		var data string
		switch {
		case ref.Group == "" && ref.Kind == "ConfigMap":
			cm, ok := e.ConfigMap(name.Namespace, name.Name)
			if !ok {
				return unresolved(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef, fmt.Sprintf("ConfigMap %s does not exist", name))
			}
			data = cm.Data[caKey]
		case ref.Group == "" && ref.Kind == "Secret":
			s, ok := e.Secret(name.Namespace, name.Name)
			if !ok {
				return unresolved(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef, fmt.Sprintf("Secret %s does not exist", name))
			}
			data = string(s.Data[caKey])
		default:
			return unresolved(gatewayv1.BackendTLSPolicyReasonInvalidKind,
				fmt.Sprintf("caCertificateRef %s/%s %s: only ConfigMaps and Secrets are supported", ref.Group, ref.Kind, ref.Name))
		}
		if err := validate.CABundle([]byte(data)); err != nil {
			return unresolved(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef,
				fmt.Sprintf("%s %s: ca.crt %v", ref.Kind, name, err))
		}
		bundle.WriteString(strings.TrimSpace(data))
		bundle.WriteByte('\n')
	}
	if bundle.Len() > 0 {
		t.CA = bundle.Bytes()
	}
	for _, san := range v.SubjectAltNames {
		switch san.Type {
		case gatewayv1.HostnameSubjectAltNameType:
			if err := validate.Hostname(string(san.Hostname), true); err != nil {
				return invalid("subjectAltNames: " + err.Error())
			}
			t.SubjectAltNames = append(t.SubjectAltNames, ir.SubjectAltName{Type: "DNS", Value: string(san.Hostname)})
		case gatewayv1.URISubjectAltNameType:
			if err := validate.Value(string(san.URI), "subjectAltNames uri"); err != nil || san.URI == "" {
				return invalid(fmt.Sprintf("subjectAltNames uri %q is not a URI", san.URI))
			}
			t.SubjectAltNames = append(t.SubjectAltNames, ir.SubjectAltName{Type: "URI", Value: string(san.URI)})
		default:
			return invalid(fmt.Sprintf("subjectAltNames type %q is not Hostname or URI", san.Type))
		}
	}
	return t, nil
}

// For returns the policy that applies to a Service port, the one naming
// the port before the one for the whole Service, or nil.
func For(e env.Env, svc types.NamespacedName, port string) *Policy {
	bt, _ := e.BackendTLS(svc, port).(*Policy)
	return bt
}

// Same reports whether rules read two evaluations of the policy for a
// Service port alike: rules keep the evaluation they read, and its status
// is reported from it.
func (a *Policy) Same(o env.Evaluated) bool {
	b, ok := o.(*Policy)
	if !ok || !samePolicy(a, b) || len(a.Losers) != len(b.Losers) {
		return false
	}
	for i := range a.Losers {
		if !samePolicy(a.Losers[i], b.Losers[i]) {
			return false
		}
	}
	return true
}

func samePolicy(a, b *Policy) bool {
	return a.Object.UID == b.Object.UID && a.Object.Namespace == b.Object.Namespace && a.Object.Name == b.Object.Name &&
		a.Object.Generation == b.Object.Generation && reflect.DeepEqual(a.TLS, b.TLS) && reflect.DeepEqual(a.Conditions, b.Conditions)
}

func sectionName(s *gatewayv1.SectionName) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

// caKey is the key of a CA bundle in a ConfigMap or Secret, as the Gateway
// API names it.
const caKey = "ca.crt"
