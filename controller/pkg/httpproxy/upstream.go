package httpproxy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/circuitbreaker"
	"isobar.dev/controller/pkg/validate"
)

// upstreamProtocolAnnotation is the prefix of Contour's Service
// annotations naming the ports of each upstream protocol
// ("projectcontour.io/upstream-protocol.h2c: http,8080").
const upstreamProtocolAnnotation = "projectcontour.io/upstream-protocol."

// upstream is how service s of proxy p is spoken to, as Contour decides
// it: the service's protocol, else the Service port's appProtocol
// ("kubernetes.io/h2c" is h2c, "https" is tls), else Contour's Service
// annotations; a TLS backend is asked for host (the route's host
// rewrite, else an ExternalName Service's name) and verified as
// s.validation says. An ExternalName Service is used only where the
// profile enables them.
func (w *walk) upstream(p *contourv1.HTTPProxy, route, service int, s *contourv1.Service, host string) (backend.Upstream, *problem) {
	var up backend.Upstream
	if s.Protocol != nil {
		switch *s.Protocol {
		case "h2", "h2c", "tls":
			up.Protocol = *s.Protocol
		default:
			return up, refused(contourv1.ConditionTypeServiceError, "UnsupportedProtocol", fmt.Sprintf("unsupported protocol: %v", *s.Protocol))
		}
	}
	if svc, ok := w.e.Service(p.Namespace, s.Name); ok {
		// The limits apply to the Service's clusters (see circuitbreaker);
		// a proxy routing to it is where a bad one is reported.
		_, problems := circuitbreaker.Of(svc)
		for _, m := range problems {
			w.status(p).Valid.AddWarningf(contourv1.ConditionTypeServiceError, "CircuitBreakerAnnotationInvalid", "routes[%d].services[%d]: %s", route, service, m)
		}
		if s.Protocol == nil {
			up.Protocol = declaredProtocol(svc, int32(s.Port))
		}
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			if !w.opts.EnableExternalNameService {
				return up, refused(contourv1.ConditionTypeServiceError, "ServiceUnresolvedReference",
					fmt.Sprintf("Spec.Routes unresolved service reference: %s/%s is an ExternalName service, these are not enabled: see the profile's httpproxy.enableExternalNameService", p.Namespace, s.Name))
			}
			if err := validate.Hostname(svc.Spec.ExternalName, false); err != nil {
				return up, refused(contourv1.ConditionTypeServiceError, "ServiceUnresolvedReference",
					fmt.Sprintf("Spec.Routes unresolved service reference: %s/%s: externalName: %v", p.Namespace, s.Name, err))
			}
			up.ExternalName = svc.Spec.ExternalName
		}
	}
	if v := s.UpstreamValidation; v != nil {
		if up.Protocol != "tls" && up.Protocol != "h2" {
			w.status(p).Valid.AddWarningf(contourv1.ConditionTypeServiceError, "ValidationHasNoEffect",
				"routes[%d].services[%d]: validation takes effect only with protocol tls or h2", route, service)
		} else {
			from := refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: p.Namespace}
			ca, bad := w.caSecret(from, fmt.Sprintf("Service [%s:%d] ", s.Name, s.Port), v)
			if bad != nil {
				return up, bad
			}
			up.CA, up.SubjectNames = ca, strings.Join(cmpSubjectNames(v), ",")
		}
	}
	if up.Protocol == "tls" || up.Protocol == "h2" {
		up.SNI = cmp.Or(host, up.ExternalName)
	}
	return up, nil
}

// declaredProtocol is the Contour protocol a Service declares for its
// port: its appProtocol when it has one, else Contour's annotations.
func declaredProtocol(svc *corev1.Service, port int32) string {
	for _, sp := range svc.Spec.Ports {
		if sp.Port != port {
			continue
		}
		if ap := sp.AppProtocol; ap != nil {
			switch *ap {
			case "kubernetes.io/h2c":
				return "h2c"
			case "https":
				return "tls"
			}
			return ""
		}
		if len(svc.Annotations) == 0 {
			return ""
		}
		for _, proto := range []string{"h2", "h2c", "tls"} {
			for p := range strings.SplitSeq(svc.Annotations[upstreamProtocolAnnotation+proto], ",") {
				if p = strings.TrimSpace(p); p != "" && (p == sp.Name || p == strconv.Itoa(int(sp.Port))) {
					return proto
				}
			}
		}
	}
	return ""
}

// cmpSubjectNames are a validation's subject names: subjectNames when
// given (subjectName their first), else subjectName.
func cmpSubjectNames(v *contourv1.UpstreamValidation) []string {
	if len(v.SubjectNames) > 0 {
		return v.SubjectNames
	}
	return []string{v.SubjectName}
}

// caSecret is the CA Secret of a validation: of the namespace of the
// object that names it (from), or of another that delegates it, holding
// ca.crt. what starts its messages.
func (w *walk) caSecret(from refgrant.From, what string, v *contourv1.UpstreamValidation) (*corev1.Secret, *problem) {
	invalid := func(format string, args ...any) (*corev1.Secret, *problem) {
		return nil, refused(contourv1.ConditionTypeServiceError, "TLSUpstreamValidation",
			what+"TLS upstream validation policy error: "+fmt.Sprintf(format, args...))
	}
	switch {
	case v.SubjectName == "":
		return invalid("missing subject alternative name")
	case len(v.SubjectNames) > 0 && v.SubjectNames[0] != v.SubjectName:
		return invalid("first entry of SubjectNames (%s) does not match SubjectName (%s)", v.SubjectNames[0], v.SubjectName)
	case slices.Contains(cmpSubjectNames(v), ""):
		return invalid("a subject name is empty")
	}
	ns, name := refgrant.ProxySecret(from.Namespace, v.CACertificate)
	if !w.e.Granted(from, ns, refgrant.To{Kind: "Secret", Name: name}) {
		return nil, refused(contourv1.ConditionTypeTLSError, "CACertificateNotDelegated",
			fmt.Sprintf("service.UpstreamValidation.CACertificate Secret %q is not configured for certificate delegation", ns+"/"+name))
	}
	secret, ok := w.e.Secret(ns, name)
	switch {
	case !ok:
		return invalid("invalid CA Secret %q: Secret not found", ns+"/"+name)
	case len(secret.Data[backend.CACertKey]) == 0:
		return invalid("invalid CA Secret %q: empty %q key", ns+"/"+name, backend.CACertKey)
	}
	if err := validate.CABundle(secret.Data[backend.CACertKey]); err != nil {
		return invalid("invalid CA Secret %q: %q %v", ns+"/"+name, backend.CACertKey, err)
	}
	return secret, nil
}
