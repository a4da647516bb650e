package httpproxy

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// defaultJWKSTimeout is how long Envoy waits for a JWKS when the provider
// does not say, as Contour has it.
const defaultJWKSTimeout = time.Second

// jwtProviders are a root's virtualhost.jwtProviders as Contour serves
// them: Envoy's jwt_authn verifies the tokens of the virtual host's TLS
// routes (insecure requests are not verified, as in Contour, whose filter
// is on the TLS virtual host only).
type jwtProviders struct {
	providers []ir.JWTProvider
	// names are the IR names of the providers, by their own.
	names map[string]string
	// def is the IR name of the provider routes require unless they say
	// otherwise; "" for none.
	def string
}

// jwtProviders reads a root's virtualhost.jwtProviders: nil when it has
// none. A problem makes the proxy invalid, as in Contour.
func (w *walk) jwtProviders(root *contourv1.HTTPProxy) (*jwtProviders, *problem) {
	vh := root.Spec.VirtualHost
	if len(vh.JWTProviders) == 0 {
		return nil, nil
	}
	if vh.TLS == nil || vh.TLS.SecretName == "" {
		return nil, refused(contourv1.ConditionTypeJWTVerificationError, "JWTVerificationNotPermitted",
			"Spec.VirtualHost.JWTProviders can only be defined for root HTTPProxies that terminate TLS")
	}
	out := &jwtProviders{names: map[string]string{}}
	for i := range vh.JWTProviders {
		p := &vh.JWTProviders[i]
		if _, dup := out.names[p.Name]; dup {
			return nil, refused(contourv1.ConditionTypeJWTVerificationError, "DuplicateProviderName",
				"Spec.VirtualHost.JWTProviders is invalid: duplicate name "+p.Name)
		}
		if err := validate.Text(p.Name, "name"); err != nil || p.Name == "" {
			return nil, refused(contourv1.ConditionTypeJWTVerificationError, "ProviderNameInvalid",
				fmt.Sprintf("Spec.VirtualHost.JWTProviders[%d].name %q is not a name", i, p.Name))
		}
		name := vh.Fqdn + "/" + p.Name
		out.names[p.Name] = name
		if p.Default {
			if out.def != "" {
				return nil, refused(contourv1.ConditionTypeJWTVerificationError, "MultipleDefaultProvidersSpecified",
					"Spec.VirtualHost.JWTProviders is invalid: at most one provider can be set as the default")
			}
			out.def = name
		}
		if err := validate.Text(p.Issuer, "issuer"); err != nil {
			return nil, refused(contourv1.ConditionTypeJWTVerificationError, "IssuerInvalid", "Spec.VirtualHost.JWTProviders: "+err.Error())
		}
		for _, a := range p.Audiences {
			if err := validate.Text(a, "audience"); err != nil {
				return nil, refused(contourv1.ConditionTypeJWTVerificationError, "AudienceInvalid", "Spec.VirtualHost.JWTProviders: "+err.Error())
			}
		}
		jwks, bad := w.remoteJWKS(root, &p.RemoteJWKS)
		if bad != nil {
			return nil, bad
		}
		out.providers = append(out.providers, ir.JWTProvider{Name: name, Issuer: p.Issuer, Audiences: p.Audiences, JWKS: jwks, Forward: p.ForwardJWT})
	}
	return out, nil
}

// remoteJWKS is where Envoy fetches a provider's keys: the URI through a
// cluster of its host and port (the scheme's when it has none), which
// Envoy resolves, over TLS for https: verified against validation's CA
// for its subject name, else not verified, as in Contour.
func (w *walk) remoteJWKS(root *contourv1.HTTPProxy, r *contourv1.RemoteJWKS) (ir.RemoteJWKS, *problem) {
	bad := func(reason, format string, args ...any) (ir.RemoteJWKS, *problem) {
		return ir.RemoteJWKS{}, refused(contourv1.ConditionTypeJWTVerificationError, reason, "Spec.VirtualHost.JWTProviders.RemoteJWKS."+fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(r.URI)
	switch {
	case err != nil:
		return bad("RemoteJWKSURIInvalid", "URI is invalid: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("RemoteJWKSSchemeInvalid", "URI has invalid scheme %q, must be http or https", u.Scheme)
	case u.User != nil || u.Fragment != "":
		return bad("RemoteJWKSURIInvalid", "URI is invalid: %q has user information or a fragment", r.URI)
	}
	if err := validate.Text(r.URI, "URI"); err != nil {
		return bad("RemoteJWKSURIInvalid", "URI is invalid: %v", err)
	}
	host := u.Hostname()
	if net.ParseIP(host) == nil && validate.Hostname(host, false) != nil {
		return bad("RemoteJWKSURIInvalid", "URI is invalid: %q is not a host name or an address", host)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return bad("RemoteJWKSPortInvalid", "URI has an invalid port: %q", p)
		}
	}
	up := backend.Upstream{}
	switch r.DNSLookupFamily {
	case "", "auto":
	case "v4", "v6":
		up.DNSFamily = r.DNSLookupFamily
	default:
		return bad("RemoteJWKSDNSLookupFamilyInvalid", "DNSLookupFamily has an invalid value %q, must be auto, v4 or v6", r.DNSLookupFamily)
	}
	if u.Scheme == "https" {
		up.Protocol, up.SNI = "tls", host
	}
	if v := r.UpstreamValidation; v != nil {
		if u.Scheme == "http" {
			return bad("RemoteJWKSUpstreamValidationInvalid", "UpstreamValidation must not be specified when URI scheme is http.")
		}
		from := refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: root.Namespace}
		ca, p := w.caSecret(from, "", v)
		switch {
		case p != nil && p.Reason == "CACertificateNotDelegated":
			ns, name := refgrant.ProxySecret(root.Namespace, v.CACertificate)
			return bad("RemoteJWKSCACertificateNotDelegated", "UpstreamValidation.CACertificate Secret %q is not configured for certificate delegation", ns+"/"+name)
		case p != nil:
			return bad("RemoteJWKSUpstreamValidationInvalid", "UpstreamValidation is invalid: %s", p.Message)
		}
		up.CA, up.SubjectNames = ca, strings.Join(cmpSubjectNames(v), ",")
	}
	out := ir.RemoteJWKS{URI: r.URI, Timeout: defaultJWKSTimeout}
	if r.Timeout != "" {
		if out.Timeout, err = time.ParseDuration(r.Timeout); err != nil || out.Timeout < 0 {
			return bad("RemoteJWKSTimeoutInvalid", "Timeout is invalid: %q is not a duration", r.Timeout)
		}
	}
	if r.CacheDuration != "" {
		if out.CacheDuration, err = time.ParseDuration(r.CacheDuration); err != nil || out.CacheDuration <= 0 {
			return bad("RemoteJWKSCacheDurationInvalid", "CacheDuration is invalid: %q is not a duration above zero", r.CacheDuration)
		}
	}
	spec := backend.HostCluster(w.names, host, int32(port), up)
	w.tree.Clusters = append(w.tree.Clusters, spec)
	out.Cluster = spec.Name
	return out, nil
}

// jwtRequirement is the provider route i of proxy p requires: the one its
// jwtVerificationPolicy names, none when it disables verification, else
// the root's default. A provider the root does not have is an error, as
// in Contour; the proxy's routes are not served rather than served
// without the verification they ask for.
func (w *walk) jwtRequirement(i int, r *contourv1.Route) (string, *problem) {
	pol := r.JWTVerificationPolicy
	switch {
	case pol == nil && w.jwt == nil:
		return "", nil
	case pol == nil:
		return w.jwt.def, nil
	case pol.Require != "" && pol.Disabled:
		return "", refused(contourv1.ConditionTypeJWTVerificationError, "InvalidJWTVerificationPolicy",
			fmt.Sprintf("routes[%d]: route's JWT verification policy cannot specify both require and disabled", i))
	case pol.Disabled:
		return "", nil
	case pol.Require == "":
		return w.jwt.defaultOrNone(), nil
	}
	if name, ok := w.jwt.nameOf(pol.Require); ok {
		return name, nil
	}
	return "", refused(contourv1.ConditionTypeJWTVerificationError, "JWTProviderNotDefined",
		fmt.Sprintf("Route references an undefined JWT provider %q", pol.Require))
}

func (j *jwtProviders) defaultOrNone() string {
	if j == nil {
		return ""
	}
	return j.def
}

func (j *jwtProviders) nameOf(provider string) (string, bool) {
	if j == nil {
		return "", false
	}
	name, ok := j.names[provider]
	return name, ok
}
