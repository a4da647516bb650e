package routerule

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/ir"
)

// session is a rule's sessionPersistence as Envoy's stateful session
// filter keeps it (GEP-1619), or why it cannot be kept as written:
//   - A session cookie (the default lifetime) has no lifetime Envoy could
//     enforce, and a header-based session none at all, so absoluteTimeout
//     is refused for both; a Permanent cookie's is its Max-Age.
//   - Envoy keeps a session within the cluster its weighted choice
//     picked, so a rule splitting traffic among backends has them as one
//     cluster instead (see splitSession).
//
// A session without a sessionName gets one unique to the route's rule, so
// that two rules never share a session (the GEP requires it). A rule
// without backends has no endpoint to keep, and no session.
func session(sp *gatewayv1.SessionPersistence, kind, namespace, name string, rule, backends int) (*ir.Session, error) {
	if backends == 0 {
		return nil, nil
	}
	typ := gatewayv1.CookieBasedSessionPersistence
	if sp.Type != nil {
		typ = *sp.Type
	}
	sessionName := ""
	if sp.SessionName != nil {
		sessionName = *sp.SessionName
	}
	if sessionName == "" {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s/%s/%s/%d", kind, namespace, name, rule)
		sessionName = fmt.Sprintf("isobar-session-%08x", h.Sum32())
	}
	if !isToken(sessionName) {
		return nil, fmt.Errorf("sessionPersistence.sessionName %q is not a valid %s name (letters, digits and !#$%%&'*+-.^_`|~ only)", sessionName, strings.ToLower(string(typ)))
	}
	out := &ir.Session{}
	switch typ {
	case gatewayv1.CookieBasedSessionPersistence:
		out.Cookie = sessionName
	case gatewayv1.HeaderBasedSessionPersistence:
		out.Header = strings.ToLower(sessionName)
	default:
		return nil, fmt.Errorf("sessionPersistence.type %q is not Cookie or Header", typ)
	}
	permanent := sp.CookieConfig != nil && sp.CookieConfig.LifetimeType != nil && *sp.CookieConfig.LifetimeType == gatewayv1.PermanentCookieLifetimeType
	if sp.CookieConfig != nil && typ != gatewayv1.CookieBasedSessionPersistence {
		return nil, errors.New("sessionPersistence.cookieConfig is set for a session that is not kept in a cookie")
	}
	switch {
	case sp.AbsoluteTimeout == nil && permanent:
		return nil, errors.New("sessionPersistence with a Permanent cookie needs an absoluteTimeout, its lifetime")
	case sp.AbsoluteTimeout == nil:
	case typ == gatewayv1.HeaderBasedSessionPersistence:
		return nil, errors.New("sessionPersistence.absoluteTimeout is not supported for a header-based session: Envoy cannot end one")
	case !permanent:
		return nil, errors.New("sessionPersistence.absoluteTimeout needs cookieConfig.lifetimeType Permanent: Envoy can end a session only through the cookie's Max-Age, which a session cookie does not have")
	default:
		d, err := ParseDuration("sessionPersistence.absoluteTimeout", *sp.AbsoluteTimeout)
		if err != nil {
			return nil, err
		}
		if d < time.Second || d%time.Second != 0 {
			return nil, fmt.Errorf("sessionPersistence.absoluteTimeout %s is not a whole number of seconds, which a cookie's Max-Age counts in", d)
		}
		out.TTL = d
	}
	return out, nil
}

// CheckSession reports why a sessionPersistence that is not a rule's own
// (an XBackendTrafficPolicy's) cannot be kept, if it cannot.
func CheckSession(sp *gatewayv1.SessionPersistence) error {
	_, err := session(sp, "", "", "", 0, 1)
	return err
}

// SessionPolicy is an evaluated policy that keeps sessions for the rules
// whose one backend is its Service (an XBackendTrafficPolicy).
type SessionPolicy interface {
	SessionPersistence() *gatewayv1.SessionPersistence
}

// policySession is how a rule whose one backend, ref, resolved keeps
// sessions when it sets no sessionPersistence of its own: as the policy of
// the backend's Service says (a rule's own setting is the more specific,
// as the Policy Attachment GEP orders them). A rule of several backends
// takes no policy's: its sessions could not hold across the split.
func policySession(ev *backend.Resolver, kind, ns, name string, rule int, ref *gatewayv1.BackendObjectReference) (*ir.Session, error) {
	if ref.Group != nil && *ref.Group != "" || ref.Kind != nil && *ref.Kind != "Service" {
		return nil, nil
	}
	svcNS := ns
	if ref.Namespace != nil {
		svcNS = string(*ref.Namespace)
	}
	p, _ := ev.Env.BackendTraffic(types.NamespacedName{Namespace: svcNS, Name: string(ref.Name)}).(SessionPolicy)
	if p == nil || p.SessionPersistence() == nil {
		return nil, nil
	}
	return session(p.SessionPersistence(), kind, ns, name, rule, 1)
}

// splitSession makes the weighted backends of a rule that keeps sessions
// one cluster, each backend's endpoints a locality of its weight: Envoy
// keeps a session on an endpoint of the cluster the route picked, so
// across weighted clusters a session would move with every pick
// (GEP-1619 asks that it hold across them). One cluster cannot change
// headers per backend, answer 500 for one backend's share, or speak to
// backends differently, so a rule that asks for that is refused.
func splitSession(ev *backend.Resolver, kind, ns, name string, rule int, d *ir.Destination) error {
	if len(d.Backends) < 2 {
		return nil
	}
	var first *backend.ClusterSpec
	for _, b := range d.Backends {
		switch {
		case b.Invalid:
			return errors.New("sessionPersistence across backendRefs needs every backendRef resolved: one cluster cannot answer 500 for one's share")
		case b.RequestHeaders != nil || b.ResponseHeaders != nil || len(b.CookieRewrites) > 0 || b.Hostname != "":
			return errors.New("sessionPersistence across backendRefs cannot keep a backendRef's own filters: its backends are one cluster")
		}
		i := slices.IndexFunc(ev.Clusters, func(s backend.ClusterSpec) bool { return s.Name == b.Cluster })
		if i < 0 || ev.Clusters[i].Service == nil {
			return fmt.Errorf("sessionPersistence across backendRefs needs Services as backends; %s is not one", b.Cluster)
		}
		if first == nil {
			first = &ev.Clusters[i]
		} else if !speaksLike(*first, ev.Clusters[i]) {
			return fmt.Errorf("sessionPersistence across backendRefs needs backends spoken to alike, and %s and %s differ in protocol or TLS", first.Name, b.Cluster)
		}
	}
	shared := backend.SharedCluster(ev.Names, fmt.Sprintf("session:%s:%s/%s/rule/%d", kind, ns, name, rule), d.Backends)
	ev.Use(shared)
	d.Backends = []ir.WeightedCluster{{Cluster: shared.Name, Weight: 1}}
	return nil
}

// speaksLike reports whether Envoy speaks to the endpoints of two Service
// port clusters alike: the protocol and TLS of one serves the other's.
func speaksLike(a, b backend.ClusterSpec) bool {
	appProtocol := func(s backend.ClusterSpec) string {
		if s.Port == nil || s.Port.AppProtocol == nil {
			return ""
		}
		return *s.Port.AppProtocol
	}
	return a.GRPC == b.GRPC && a.Upstream == b.Upstream && a.TLS == nil && b.TLS == nil && appProtocol(a) == appProtocol(b) &&
		a.Service.Spec.Type != corev1.ServiceTypeExternalName && b.Service.Spec.Type != corev1.ServiceTypeExternalName
}

// isToken reports whether s is an HTTP token (RFC 9110), which both a
// cookie name and a header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
