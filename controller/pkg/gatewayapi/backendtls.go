package gatewayapi

import (
	"bytes"
	"cmp"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
)

// backendTLS is a BackendTLSPolicy as it applies to one Service (and port
// name, "" for every port).
type backendTLS struct {
	policy *gatewayv1.BackendTLSPolicy
	tls    *ir.UpstreamTLS // nil when the policy is not usable
	conds  policyConditions
	// losers are newer policies for the same Service port; their
	// Conflicted status goes to the same Gateways as this one's.
	losers []*backendTLS
}

// evaluateBackendTLS returns what evaluates every BackendTLSPolicy of res
// once per translation. When two policies target the same Service port,
// the older one applies and the newer is Conflicted, as the Gateway API
// orders policies.
func evaluateBackendTLS(res *resources.Resources) env.EvaluateFunc {
	return func(e env.Env) map[env.PolicyKey]env.Evaluated {
		return backendTLSPolicies(res, e)
	}
}

func backendTLSPolicies(res *resources.Resources, e env.Env) map[env.PolicyKey]env.Evaluated {
	policies := slices.Clone(res.BackendTLSPolicies)
	slices.SortFunc(policies, func(a, b *gatewayv1.BackendTLSPolicy) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
			strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	applied := map[env.PolicyKey]*backendTLS{}
	for _, p := range policies {
		bt := &backendTLS{policy: p, conds: policyConditions{Generation: p.Generation}}
		bt.tls = evaluatePolicy(p, e, &bt.conds)
		for _, ref := range p.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" {
				continue
			}
			k := env.PolicyKey{Service: key(p.Namespace, string(ref.Name)), Port: string(deref(ref.SectionName))}
			if older, taken := applied[k]; taken && older.policy != p {
				older.losers = append(older.losers, bt)
				bt.conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonConflicted,
					fmt.Sprintf("BackendTLSPolicy %s/%s, which is older, already applies to Service %s", older.policy.Namespace, older.policy.Name, ref.Name))
				continue
			}
			applied[k] = bt
		}
		bt.conds.Set(gatewayv1.PolicyConditionAccepted, true, gatewayv1.PolicyReasonAccepted, "Policy is accepted")
		bt.conds.Set(gatewayv1.BackendTLSPolicyConditionResolvedRefs, true, gatewayv1.BackendTLSPolicyReasonResolvedRefs, "All references are resolved")
	}
	out := make(map[env.PolicyKey]env.Evaluated, len(applied))
	for k, bt := range applied {
		out[k] = bt
	}
	return out
}

// evaluatePolicy resolves a policy's CA certificates and names.
func evaluatePolicy(p *gatewayv1.BackendTLSPolicy, e env.Env, conds *policyConditions) *ir.UpstreamTLS {
	v := p.Spec.Validation
	t := &ir.UpstreamTLS{SNI: string(v.Hostname)}
	invalid := func(reason gatewayv1.PolicyConditionReason, msg string) *ir.UpstreamTLS {
		conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.BackendTLSPolicyReasonNoValidCACertificate, msg)
		conds.Set(gatewayv1.BackendTLSPolicyConditionResolvedRefs, false, reason, msg)
		return nil
	}
	if err := checkHostname(t.SNI, false); err != nil {
		conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, "validation.hostname: "+err.Error())
		return nil
	}
	switch {
	case v.WellKnownCACertificates != nil && len(v.CACertificateRefs) > 0:
		conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, "set caCertificateRefs or wellKnownCACertificates, not both")
		return nil
	case v.WellKnownCACertificates != nil:
		if *v.WellKnownCACertificates != gatewayv1.WellKnownCACertificatesSystem {
			conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid,
				fmt.Sprintf("wellKnownCACertificates %q is not supported; use System", *v.WellKnownCACertificates))
			return nil
		}
		t.SystemCA = true
	case len(v.CACertificateRefs) == 0:
		conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, "set caCertificateRefs or wellKnownCACertificates")
		return nil
	}
	var bundle bytes.Buffer
	for _, ref := range v.CACertificateRefs {
		name := key(p.Namespace, string(ref.Name))
		var data string
		switch {
		case ref.Group == "" && ref.Kind == "ConfigMap":
			cm, ok := e.ConfigMap(name.Namespace, name.Name)
			if !ok {
				return invalid(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef, fmt.Sprintf("ConfigMap %s does not exist", name))
			}
			data = cm.Data[caKey]
		case ref.Group == "" && ref.Kind == "Secret":
			s, ok := e.Secret(name.Namespace, name.Name)
			if !ok {
				return invalid(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef, fmt.Sprintf("Secret %s does not exist", name))
			}
			data = string(s.Data[caKey])
		default:
			return invalid(gatewayv1.BackendTLSPolicyReasonInvalidKind,
				fmt.Sprintf("caCertificateRef %s/%s %s: only ConfigMaps and Secrets are supported", ref.Group, ref.Kind, ref.Name))
		}
		if !validCABundle([]byte(data)) {
			return invalid(gatewayv1.BackendTLSPolicyReasonInvalidCACertificateRef,
				fmt.Sprintf("%s %s has no PEM certificate under ca.crt", ref.Kind, name))
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
			if err := checkHostname(string(san.Hostname), true); err != nil {
				conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, "subjectAltNames: "+err.Error())
				return nil
			}
			t.SubjectAltNames = append(t.SubjectAltNames, ir.SubjectAltName{Type: "DNS", Value: string(san.Hostname)})
		case gatewayv1.URISubjectAltNameType:
			if err := checkValue(string(san.URI), "subjectAltNames uri"); err != nil || san.URI == "" {
				conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, fmt.Sprintf("subjectAltNames uri %q is not a URI", san.URI))
				return nil
			}
			t.SubjectAltNames = append(t.SubjectAltNames, ir.SubjectAltName{Type: "URI", Value: string(san.URI)})
		default:
			conds.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, fmt.Sprintf("subjectAltNames type %q is not Hostname or URI", san.Type))
			return nil
		}
	}
	return t
}

// validCABundle reports whether data holds at least one PEM certificate and
// nothing that fails to parse.
func validCABundle(data []byte) bool {
	found := false
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return found
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return false
		}
		found = true
	}
}

// backendTLSFor returns the policy that applies to a Service port, the one
// naming the port before the one for the whole Service.
func backendTLSFor(e env.Env, svc types.NamespacedName, port string) *backendTLS {
	bt, _ := e.BackendTLS(svc, port).(*backendTLS)
	return bt
}

// Same reports whether rules read two evaluations of the policy for a
// Service port alike: rules keep the evaluation they read, and its status
// is reported from it.
func (a *backendTLS) Same(o env.Evaluated) bool {
	b, ok := o.(*backendTLS)
	if !ok || !samePolicy(a, b) || len(a.losers) != len(b.losers) {
		return false
	}
	for i := range a.losers {
		if !samePolicy(a.losers[i], b.losers[i]) {
			return false
		}
	}
	return true
}

func samePolicy(a, b *backendTLS) bool {
	return a.policy.UID == b.policy.UID && a.policy.Namespace == b.policy.Namespace && a.policy.Name == b.policy.Name &&
		a.policy.Generation == b.policy.Generation && reflect.DeepEqual(a.tls, b.tls) && reflect.DeepEqual(a.conds, b.conds)
}

// policyAncestor records that this Gateway uses a BackendTLSPolicy, and is
// where the policies it beat report their conflict.
func (t *gatewayTranslator) policyAncestor(bt *backendTLS) {
	t.recordAncestor(bt)
	for _, l := range bt.losers {
		t.recordAncestor(l)
	}
}

func (t *gatewayTranslator) recordAncestor(bt *backendTLS) {
	k := types.NamespacedName{Namespace: bt.policy.Namespace, Name: bt.policy.Name}
	ns := gatewayv1.Namespace(t.gw.Namespace)
	ref := gatewayv1.ParentReference{Group: ptrTo(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptrTo(gatewayv1.Kind("Gateway")), Namespace: &ns, Name: gatewayv1.ObjectName(t.gw.Name)}
	for _, a := range t.status.BackendTLSPolicies[k] {
		if a.AncestorRef.Name == ref.Name && deref(a.AncestorRef.Namespace) == ns {
			return
		}
	}
	t.status.BackendTLSPolicies[k] = append(t.status.BackendTLSPolicies[k], gatewayv1.PolicyAncestorStatus{
		AncestorRef: ref, ControllerName: t.controller, Conditions: slices.Clone(bt.conds.Sorted()),
	})
}
