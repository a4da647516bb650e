package httpproxy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/timeout"
)

// refuseExtension are the fields of an ExtensionService not served yet.
var refuseExtension = refuse[contourv1alpha1.ExtensionServiceSpec]("services", "validation", "protocol", "loadBalancerPolicy", "timeoutPolicy", "protocolVersion",
	"circuitBreakerPolicy")

// extension is an ExtensionService as Envoy speaks to it: gRPC over
// HTTP/2 to the cluster of its Service.
type extension struct {
	cluster string
	// sni is the name asked of a TLS server and the checks' :authority.
	sni string
	// timeout is the answer's timeout unless the route's user says (0:
	// Envoy's default).
	timeout  time.Duration
	clusters []backend.ClusterSpec
}

// ExtensionStatus is the status Contour writes on an ExtensionService:
// Valid, with the errors and warnings of its spec.
func ExtensionStatus(e env.Env, names *backend.Names, x *contourv1alpha1.ExtensionService) contourv1alpha1.ExtensionServiceStatus {
	w := &walk{e: e, names: names, tree: &Tree{}}
	_, valid := w.extension(x)
	return contourv1alpha1.ExtensionServiceStatus{Conditions: []contourv1.DetailedCondition{valid}}
}

// extension checks an ExtensionService and resolves its Service, as
// Contour does; the clusters it needs go to the tree when it is valid.
func (w *walk) extension(x *contourv1alpha1.ExtensionService) (*extension, contourv1.DetailedCondition) {
	valid := contourv1.DetailedCondition{}
	valid.Type, valid.ObservedGeneration = contourv1.ValidConditionType, x.Generation
	ext, bad := w.extensionOf(x, &valid)
	if bad != nil {
		valid.AddError(bad.Type, bad.Reason, bad.Message)
	}
	if len(valid.Errors) > 0 {
		return nil, valid
	}
	valid.Status, valid.Reason, valid.Message = contourv1.ConditionTrue, "Valid", "Valid ExtensionService"
	w.tree.Clusters = append(w.tree.Clusters, ext.clusters...)
	return ext, valid
}

// usableExtension resolves an ExtensionService Envoy is to ask: msg says
// why it cannot be used (missing, or not valid).
func (w *walk) usableExtension(ref types.NamespacedName) (*extension, string) {
	x, ok := w.e.ExtensionService(ref.Namespace, ref.Name)
	if !ok {
		return nil, fmt.Sprintf("extension service %q not found", ref)
	}
	ext, valid := w.extension(x)
	if ext == nil {
		msg := valid.Message
		if len(valid.Errors) > 0 {
			msg = valid.Errors[0].Message
		}
		return nil, fmt.Sprintf("extension service %q is not valid: %s", ref, msg)
	}
	return ext, ""
}

// ExtensionServer resolves an ExtensionService the profile names for
// every connection manager (the tracing collector, the global
// authorization server): its cluster, the requests' :authority and
// timeout, and the clusters it needs. When the ExtensionService cannot be
// used, msg says why, and the cluster is "purpose/namespace/name", one to
// build without endpoints: Envoy answers as when the server is down.
func ExtensionServer(e env.Env, names *backend.Names, ref types.NamespacedName, purpose string) (cluster, authority string, timeout time.Duration, clusters []backend.ClusterSpec, msg string) {
	w := &walk{e: e, names: names, tree: &Tree{}}
	ext, msg := w.usableExtension(ref)
	if msg != "" {
		return purpose + "/" + ref.Namespace + "/" + ref.Name, "", 0, nil, msg
	}
	return ext.cluster, ext.sni, ext.timeout, w.tree.Clusters, ""
}

func (w *walk) extensionOf(x *contourv1alpha1.ExtensionService, valid *contourv1.DetailedCondition) (*extension, *problem) {
	spec := &x.Spec
	if f := refuseExtension(spec); f != "" {
		return nil, refused(contourv1.ConditionTypeSpecError, "NotSupported", fmt.Sprintf("spec.%s is not supported yet", f))
	}
	if v := spec.ProtocolVersion; v != "" && v != contourv1alpha1.SupportProtocolVersion3 {
		return nil, refused(contourv1.ConditionTypeSpecError, "UnsupportedProtocolVersion", fmt.Sprintf("spec.protocolVersion %q is not supported: Envoy speaks v3", v))
	}
	up := backend.Upstream{Protocol: "h2"}
	if p := spec.Protocol; p != nil && *p != "" {
		if *p != "h2" && *p != "h2c" {
			return nil, refused(contourv1.ConditionTypeSpecError, "UnsupportedProtocol", fmt.Sprintf("spec.protocol %q is not h2 or h2c", *p))
		}
		up.Protocol = *p
	}
	out := &extension{}
	if tp := spec.TimeoutPolicy; tp != nil {
		var err error
		if out.timeout, err = timeout.Parse(tp.Response); err == nil {
			up.IdleConnection, err = timeout.Parse(tp.IdleConnection)
		}
		if err != nil {
			return nil, refused(contourv1.ConditionTypeSpecError, "TimeoutPolicyNotValid", "spec.timeoutPolicy failed to parse: "+err.Error())
		}
		if out.timeout < 0 {
			return nil, refused(contourv1.ConditionTypeSpecError, "TimeoutPolicyNotValid", "spec.timeoutPolicy.response: a check needs a timeout, not infinity")
		}
		if tp.Idle != "" {
			valid.AddWarning(contourv1.ConditionTypeSpecError, "IgnoredField", `ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`)
		}
	}
	lb, hashes, warnings := loadBalancer(spec.LoadBalancerPolicy)
	if len(hashes) > 0 {
		warnings = append(warnings, fmt.Sprintf("ignoring field %q; %s load balancer policy is not supported for ExtensionClusters", ".Spec.LoadBalancerPolicy", spec.LoadBalancerPolicy.Strategy))
		lb = ""
	}
	for _, m := range warnings {
		valid.AddWarning(contourv1.ConditionTypeSpecError, "IgnoredField", m)
	}
	up.LoadBalancer = lb
	if cb := spec.CircuitBreakerPolicy; cb != nil {
		// The server's own limits, in place of its Service's annotations'.
		up.CircuitBreakers = ir.CircuitBreakers{MaxConnections: cb.MaxConnections, MaxPendingRequests: cb.MaxPendingRequests,
			MaxRequests: cb.MaxRequests, MaxRetries: cb.MaxRetries, PerHostMaxConnections: cb.PerHostMaxConnections}
	}
	if v := spec.UpstreamValidation; v != nil {
		if up.Protocol != "h2" {
			return nil, refused(contourv1.ConditionTypeSpecError, "InconsistentProtocol", fmt.Sprintf("upstream TLS validation not supported for %q protocol", up.Protocol))
		}
		from := refgrant.From{Group: contourv1.GroupName, Kind: "ExtensionService", Namespace: x.Namespace}
		ca, bad := w.caSecret(from, "", v)
		if bad != nil {
			return nil, bad
		}
		names := cmpSubjectNames(v)
		up.CA, up.SubjectNames, up.SNI = ca, strings.Join(names, ","), names[0]
		out.sni = names[0]
	}
	if len(spec.Services) == 0 {
		return nil, refused(contourv1.ConditionTypeServiceError, "ServiceUnresolvedReference", "spec.services names no service")
	}
	// Without weights the services share the checks equally; with
	// weights, a service of weight 0 gets none.
	weighted := slices.ContainsFunc(spec.Services, func(s contourv1alpha1.ExtensionServiceTarget) bool { return s.Weight > 0 })
	var members []ir.WeightedCluster
	for _, s := range spec.Services {
		if s.Port < 1 || s.Port > 65535 {
			return nil, refused(contourv1.ConditionTypeServiceError, "ServicePortInvalid", fmt.Sprintf("service %q: port must be in the range 1-65535", s.Name))
		}
		if svc, ok := w.e.Service(x.Namespace, s.Name); ok && svc.Spec.ExternalName != "" {
			return nil, refused(contourv1.ConditionTypeServiceError, "UnsupportedServiceType", fmt.Sprintf("Service %q is of unsupported type \"ExternalName\".", x.Namespace+"/"+s.Name))
		}
		ref := backend.Ref{HTTPBackendRef: gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(s.Name), Port: ptr(gatewayv1.PortNumber(s.Port)),
		}}}, Upstream: up}
		b := backend.ForHTTP(w.e, w.names, "ExtensionService", x.Namespace, []backend.Ref{ref})
		if c := b.Unresolved; c != nil {
			return nil, refused(contourv1.ConditionTypeServiceError, "ServiceUnresolvedReference", fmt.Sprintf("unresolved service %q: %s", x.Namespace+"/"+s.Name, c.Message))
		}
		weight := uint32(1)
		if weighted {
			weight = s.Weight
		}
		members = append(members, ir.WeightedCluster{Cluster: b.Destination.Backends[0].Cluster, Weight: weight})
		out.clusters = append(out.clusters, b.Clusters...)
	}
	if len(members) == 1 {
		out.cluster = members[0].Cluster
		return out, nil
	}
	// Envoy asks one cluster: the services' endpoints are its localities,
	// weighted as the services are.
	shared := backend.SharedCluster(w.names, "extension/"+x.Namespace+"/"+x.Name+"/services", members)
	out.cluster, out.clusters = shared.Name, append(out.clusters, shared)
	return out, nil
}
