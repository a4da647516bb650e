package backend

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backendtls"
	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// ReasonXBackendNotAccepted is the route's ResolvedRefs reason for a
// backendRef to an XBackend that cannot be used as it is (its hostname or
// TLS): the XBackend's own status says why, for each Gateway.
const ReasonXBackendNotAccepted gatewayv1.RouteConditionReason = "XBackendNotAccepted"

// ExternalBackend is an XBackend as its cluster is built from it: a host
// Envoy resolves, spoken to in the protocol the route and the XBackend
// agree on.
type ExternalBackend struct {
	Object *gatewayxv1alpha1.XBackend
	Host   string
	Port   int32
	HTTP2  bool
	// TLS is how Envoy verifies the backend; nil speaks in cleartext.
	TLS *ir.UpstreamTLS
	// ClientCertificate is the Secret Envoy presents (mode
	// ClientAndServer); without one, a TLS backend gets the Gateway's
	// backend client certificate, as BackendTLSPolicy backends do.
	ClientCertificate *corev1.Secret
	// Conditions are the XBackend's, for each Gateway that uses it.
	Conditions condition.Policy
}

// xbackendGroup is the XBackend's API group.
const xbackendGroup = "gateway.networking.x-k8s.io"

// resolveXBackend is ResolveAs for a backendRef to an XBackend.
func (r *Resolver) resolveXBackend(what, fromNS, fromKind string, ref gatewayv1.BackendObjectReference, grpc bool) (string, bool) {
	unresolved := func(reason gatewayv1.RouteConditionReason, msg string) (string, bool) {
		r.Report(condition.UnresolvedRef(reason, what+msg))
		return "", false
	}
	ns := fromNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ns != fromNS && !r.Env.Granted(refgrant.From{Group: gatewayv1.GroupName, Kind: fromKind, Namespace: fromNS}, ns, refgrant.To{Group: xbackendGroup, Kind: "XBackend", Name: string(ref.Name)}) {
		return unresolved(gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backendRef to XBackend %s/%s is not permitted: no ReferenceGrant in namespace %s allows it", ns, ref.Name, ns))
	}
	b, ok := r.Env.XBackend(ns, string(ref.Name))
	if !ok {
		return unresolved(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("XBackend %s/%s does not exist", ns, ref.Name))
	}
	if ref.Port != nil && int32(*ref.Port) != int32(b.Spec.Port.Port) {
		return unresolved(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("backendRef port %d: XBackend %s/%s has port %d", *ref.Port, ns, ref.Name, b.Spec.Port.Port))
	}
	stream := fromKind == "TCPRoute" || fromKind == "TLSRoute" || fromKind == "UDPRoute"
	proto, err := backendProtocol(b.Spec.Protocol, fromKind, grpc)
	if err != nil {
		return unresolved(gatewayv1.RouteReasonUnsupportedProtocol, fmt.Sprintf("backendRef to XBackend %s/%s: %v", ns, ref.Name, err))
	}
	if fromKind == "TLSRoute" && b.Spec.TLS != nil && b.Spec.TLS.Mode != gatewayxv1alpha1.BackendTLSModeNone {
		return unresolved(gatewayv1.RouteReasonUnsupportedValue, fmt.Sprintf("backendRef to XBackend %s/%s: a TLSRoute passes the client's TLS through, so the XBackend's tls must be None", ns, ref.Name))
	}
	x := &ExternalBackend{Object: b, HTTP2: proto == "http2" && !stream, Conditions: condition.Policy{Generation: b.Generation}}
	spec := ClusterSpec{Name: "xbackend/" + ns + "/" + string(ref.Name) + "/" + proto, XBackend: x}
	if err := x.read(r); err != nil {
		x.Conditions.Set(gatewayv1.PolicyConditionAccepted, false, gatewayv1.PolicyReasonInvalid, err.Error())
		spec.Rejected = true
		r.Use(spec)
		return unresolved(ReasonXBackendNotAccepted, fmt.Sprintf("backendRef to XBackend %s/%s: %v", ns, ref.Name, err))
	}
	msg := fmt.Sprintf("Envoy resolves %s and connects to port %d", x.Host, x.Port)
	if x.TLS != nil {
		msg += " over TLS"
	}
	x.Conditions.Set(gatewayv1.PolicyConditionAccepted, true, gatewayv1.PolicyReasonAccepted, msg)
	r.Use(spec)
	return spec.Name, true
}

// backendProtocol is how a route of fromKind speaks to an XBackend of
// protocol p: "http1", "http2" or "tcp". HTTP lets the implementation
// choose, and Envoy's choice is HTTP/1.1; a gRPC route needs HTTP/2.
func backendProtocol(p *gatewayxv1alpha1.BackendProtocol, fromKind string, grpc bool) (string, error) {
	var proto gatewayxv1alpha1.BackendProtocol
	if p != nil {
		proto = *p
	}
	switch fromKind {
	case "UDPRoute":
		return "", fmt.Errorf("an XBackend is reached over TCP, and a UDPRoute's datagrams cannot be")
	case "TCPRoute", "TLSRoute":
		if proto != "" && proto != gatewayxv1alpha1.BackendProtocolTCP {
			return "", fmt.Errorf("protocol %s: a %s forwards connections, so the XBackend's protocol must be TCP or unset", proto, fromKind)
		}
		return "tcp", nil
	}
	switch proto {
	case "":
		if grpc {
			return "http2", nil
		}
		return "http1", nil
	case gatewayxv1alpha1.BackendProtocolHTTP, gatewayxv1alpha1.BackendProtocolHTTP11:
		if grpc {
			return "", fmt.Errorf("protocol %s: gRPC needs HTTP/2", proto)
		}
		return "http1", nil
	case gatewayxv1alpha1.BackendProtocolHTTP2, gatewayxv1alpha1.BackendProtocolH2C, gatewayxv1alpha1.BackendProtocolGRPC:
		return "http2", nil
	}
	return "", fmt.Errorf("protocol %s is not supported; use HTTP, HTTP11, HTTP2, H2C or GRPC", proto)
}

// read checks the XBackend's hostname, port and TLS, reading the Secrets
// and ConfigMaps its TLS names.
func (x *ExternalBackend) read(r *Resolver) error {
	spec := &x.Object.Spec
	if spec.Type != gatewayxv1alpha1.BackendTypeExternalHostname || spec.ExternalHostname == nil {
		return fmt.Errorf("type %q is not supported; use ExternalHostname with externalHostname set", spec.Type)
	}
	x.Host, x.Port = string(spec.ExternalHostname.Hostname), int32(spec.Port.Port)
	if _, err := netip.ParseAddr(x.Host); err == nil {
		return fmt.Errorf("externalHostname.hostname %q is an IP address, not a host name", x.Host)
	}
	if err := validate.Hostname(x.Host, false); err != nil || x.Host == "" {
		return fmt.Errorf("externalHostname.hostname %q is not a valid host name", x.Host)
	}
	if strings.HasSuffix(x.Host, ".cluster.local") {
		return fmt.Errorf("externalHostname.hostname %q is a cluster name: route to its Service instead", x.Host)
	}
	if x.Port < 1 || x.Port > 65535 {
		return fmt.Errorf("port %d is not between 1 and 65535", x.Port)
	}
	if spec.Protocol != nil && *spec.Protocol == gatewayxv1alpha1.BackendProtocolH2C && spec.TLS != nil && spec.TLS.Mode != gatewayxv1alpha1.BackendTLSModeNone {
		return fmt.Errorf("protocol H2C is HTTP/2 without TLS, and tls.mode is %s", spec.TLS.Mode)
	}
	t := spec.TLS
	if t == nil || t.Mode == gatewayxv1alpha1.BackendTLSModeNone {
		if t != nil && t.ClientCertificateRef != nil {
			return fmt.Errorf("tls.clientCertificateRef is set, and tls.mode None presents no certificate")
		}
		return nil
	}
	v := t.Validation
	if v.Hostname == "" {
		v.Hostname = gatewayv1.PreciseHostname(x.Host)
	}
	if v.WellKnownCACertificates == nil && len(v.CACertificateRefs) == 0 {
		// An external host's certificate is signed by a public CA more
		// often than not: verified against the system's bundle.
		system := gatewayv1.WellKnownCACertificatesSystem
		v.WellKnownCACertificates = &system
	}
	var problem *backendtls.Problem
	if x.TLS, problem = backendtls.Resolve(r.Env, x.Object.Namespace, v); problem != nil {
		return fmt.Errorf("tls.validation: %s", problem.Message)
	}
	switch {
	case t.Mode == gatewayxv1alpha1.BackendTLSModeClientAndServer && t.ClientCertificateRef == nil:
		return fmt.Errorf("tls.mode ClientAndServer needs tls.clientCertificateRef")
	case t.Mode == gatewayxv1alpha1.BackendTLSModeServerOnly && t.ClientCertificateRef != nil:
		return fmt.Errorf("tls.clientCertificateRef is set, and tls.mode ServerOnly presents no certificate")
	case t.Mode != gatewayxv1alpha1.BackendTLSModeClientAndServer && t.Mode != gatewayxv1alpha1.BackendTLSModeServerOnly:
		return fmt.Errorf("tls.mode %q is not None, ServerOnly or ClientAndServer", t.Mode)
	case t.ClientCertificateRef == nil:
		return nil
	}
	return x.readClientCertificate(r, *t.ClientCertificateRef)
}

// readClientCertificate resolves tls.clientCertificateRef; one in another
// namespace needs a ReferenceGrant there from the XBackend.
func (x *ExternalBackend) readClientCertificate(r *Resolver, ref gatewayv1.SecretObjectReference) error {
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
		return fmt.Errorf("tls.clientCertificateRef: only core Secrets are supported")
	}
	ns := x.Object.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ns != x.Object.Namespace && !r.Env.Granted(refgrant.From{Group: xbackendGroup, Kind: "XBackend", Namespace: x.Object.Namespace}, ns, refgrant.To{Kind: "Secret", Name: string(ref.Name)}) {
		return fmt.Errorf("tls.clientCertificateRef to Secret %s/%s is not permitted: no ReferenceGrant in namespace %s allows it", ns, ref.Name, ns)
	}
	s, ok := r.Env.Secret(ns, string(ref.Name))
	if !ok {
		return fmt.Errorf("tls.clientCertificateRef: Secret %s/%s does not exist", ns, ref.Name)
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		// The error names what is wrong, never the key material.
		return fmt.Errorf("tls.clientCertificateRef: Secret %s/%s does not hold a usable certificate and key in tls.crt and tls.key: %w", ns, ref.Name, err)
	}
	x.ClientCertificate = s
	return nil
}
