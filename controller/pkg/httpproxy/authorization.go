package httpproxy

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/refgrant"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/timeout"
	"isobar.dev/controller/pkg/validate"
)

// defaultMaxRequestBytes is how much of a body a check carries when
// withRequestBody does not say, as Contour has it.
const defaultMaxRequestBytes = 1024

// authorization is a root's virtualhost.authorization as Contour serves
// it: Envoy asks the ExtensionService, over Envoy's gRPC authorization
// protocol, about every request of the virtual host's TLS routes
// (insecure requests are not checked, as in Contour, whose filter is on
// the TLS virtual host only), unless a route's authPolicy disables it.
type authorization struct {
	// server is the check every enabled route makes, without its
	// context; nil when the ExtensionService cannot be used, and the
	// routes answer as Envoy does when it cannot ask the server: 403,
	// or through when failOpen.
	server   *ir.ExtAuth
	failOpen bool
	// policy is the virtual host's authPolicy: whether routes are
	// checked unless they say otherwise, and the context they carry.
	policy *contourv1.AuthorizationPolicy
}

// authorization reads a root's virtualhost.authorization: nil when it has
// none. A problem makes the proxy invalid, as in Contour; an
// ExtensionService that cannot be used is an error on the proxy's status
// while its routes fail closed (unless failOpen), as they would if the
// server were down.
func (w *walk) authorization(root *contourv1.HTTPProxy) (*authorization, *problem) {
	vh := root.Spec.VirtualHost
	a := vh.Authorization
	if a == nil {
		return nil, nil
	}
	ref := a.ExtensionServiceRef
	if ref.Name == "" {
		// A policy alone: whether the global server checks the virtual
		// host's routes, and what the checks carry (globalAuthPolicy).
		if msg := contextProblem(a.AuthPolicy); msg != "" {
			return nil, refused(contourv1.ConditionTypeAuthError, "AuthPolicyInvalid", "Spec.Virtualhost.Authorization.AuthPolicy: "+msg)
		}
		if w.opts.GlobalExtAuth == nil {
			w.status(root).Valid.AddWarning(contourv1.ConditionTypeAuthError, "PolicyHasNoEffect",
				"Spec.VirtualHost.Authorization without an extensionRef takes effect only with the profile's globalExtAuth")
		}
		return nil, nil
	}
	if vh.TLS == nil {
		return nil, refused(contourv1.ConditionTypeAuthError, "AuthNotPermitted",
			"Spec.VirtualHost.Authorization.ExtensionServiceRef can only be defined for root HTTPProxies that terminate TLS")
	}
	if vh.TLS.Passthrough {
		return nil, refused(contourv1.ConditionTypeAuthError, "AuthNotPermitted",
			"Spec.VirtualHost.Authorization cannot apply to a TLS passthrough virtual host: Envoy sees no requests to check")
	}
	if v := cmp.Or(ref.APIVersion, contourv1alpha1.GroupVersion.String()); v != contourv1alpha1.GroupVersion.String() {
		return nil, refused(contourv1.ConditionTypeAuthError, "AuthBadResourceVersion",
			fmt.Sprintf("Spec.Virtualhost.Authorization.extensionRef specifies an unsupported resource version %q", v))
	}
	d, err := timeout.Parse(a.ResponseTimeout)
	switch {
	case err != nil:
		return nil, refused(contourv1.ConditionTypeAuthError, "AuthResponseTimeoutInvalid", "Spec.Virtualhost.Authorization.ResponseTimeout is invalid: "+err.Error())
	case d < 0:
		return nil, refused(contourv1.ConditionTypeAuthError, "AuthResponseTimeoutInvalid",
			"Spec.Virtualhost.Authorization.ResponseTimeout is invalid: a check needs a timeout, not infinity")
	}
	if msg := contextProblem(a.AuthPolicy); msg != "" {
		return nil, refused(contourv1.ConditionTypeAuthError, "AuthPolicyInvalid", "Spec.Virtualhost.Authorization.AuthPolicy: "+msg)
	}
	out := &authorization{failOpen: a.FailOpen, policy: a.AuthPolicy}
	name := types.NamespacedName{Namespace: cmp.Or(ref.Namespace, root.Namespace), Name: ref.Name}
	ext, msg := w.extensionService(root, name)
	if msg != "" {
		w.status(root).Valid.AddError(contourv1.ConditionTypeAuthError, "ExtensionServiceNotUsable", "Spec.Virtualhost.Authorization: "+msg)
		return out, nil
	}
	out.server = &ir.ExtAuth{
		GRPC: true, Cluster: ext.cluster, Authority: ext.sni,
		Timeout: cmp.Or(d, ext.timeout),
	}
	if b := a.WithRequestBody; b != nil {
		out.server.MaxBody = cmp.Or(b.MaxRequestBytes, defaultMaxRequestBytes)
		out.server.WholeBody, out.server.BodyAsBytes = !b.AllowPartialMessage, b.PackAsBytes
	}
	return out, nil
}

// extensionService resolves the ExtensionService a root names: it must
// exist, be valid, and be in the root's namespace or one whose
// ReferenceGrant lets the root refer to it (Contour asks for none; Isobar
// asks for one for every reference across namespaces).
func (w *walk) extensionService(root *contourv1.HTTPProxy, name types.NamespacedName) (*extension, string) {
	if name.Namespace != root.Namespace && !w.e.Granted(refgrant.From{Group: contourv1.GroupName, Kind: "HTTPProxy", Namespace: root.Namespace},
		name.Namespace, refgrant.To{Group: contourv1.GroupName, Kind: "ExtensionService", Name: name.Name}) {
		return nil, fmt.Sprintf("extension service %q is in another namespace, and no ReferenceGrant there allows HTTPProxies of namespace %s to refer to it", name, root.Namespace)
	}
	return w.usableExtension(name)
}

// contextProblem says what is wrong with an authPolicy's context, "" for
// nothing: its keys and values are text Envoy carries to the server.
func contextProblem(p *contourv1.AuthorizationPolicy) string {
	if p == nil {
		return ""
	}
	// In key order, so that the status names the same problem each time.
	for _, k := range slices.Sorted(maps.Keys(p.Context)) {
		if err := errors.Join(validate.Text(k, "context key"), validate.Text(p.Context[k], "context value")); err != nil {
			return err.Error()
		}
	}
	return ""
}

// policyFor is how route r is checked: nil when its authPolicy (or the
// virtual host's) disables the check; else the server with the context
// of both, the route's winning. ok is false when the route cannot be
// checked, and answers 403.
func (a *authorization) policyFor(r *contourv1.Route) (auth *ir.ExtAuth, ok bool) {
	disabled := a.policy != nil && a.policy.Disabled
	var context map[string]string
	if a.policy != nil {
		context = maps.Clone(a.policy.Context)
	}
	if r != nil && r.AuthPolicy != nil {
		disabled = r.AuthPolicy.Disabled
		if len(r.AuthPolicy.Context) > 0 && context == nil {
			context = map[string]string{}
		}
		maps.Copy(context, r.AuthPolicy.Context)
	}
	switch {
	case disabled:
		return nil, true
	case a.server == nil:
		return nil, a.failOpen
	}
	out := *a.server
	out.FailOpen, out.Context = a.failOpen, context
	return &out, true
}

// secure is the route the TLS listener serves for r: r's own without
// authorization, else a copy that is checked (the insecure listener may
// serve r too, and Contour does not check its requests).
func (a *authorization) secure(r route) *ir.Route {
	if a == nil {
		return r.route
	}
	var spec *contourv1.Route
	if r.section != "include" && r.index < len(r.proxy.Spec.Routes) {
		spec = &r.proxy.Spec.Routes[r.index]
	}
	auth, ok := a.policyFor(spec)
	if auth == nil && ok {
		return r.route
	}
	cp := *r.route
	if ok {
		cp.ExtAuth = auth
		return &cp
	}
	// Envoy's answer when it cannot ask the server, after the filters
	// before it (CORS, rate limits, IP filters, JWT verification).
	return &ir.Route{Name: cp.Name, Match: cp.Match, IPFilter: cp.IPFilter, CORS: cp.CORS, LocalRateLimit: cp.LocalRateLimit,
		JWTProvider: cp.JWTProvider, DirectResponse: &ir.DirectResponse{Status: 403}, ExtAuthPolicy: unchecked}
}

// unchecked is the policy of a route the global server does not check.
var unchecked = &ir.AuthPolicy{Disabled: true}

// globalAuthPolicy is how the Gateway's global authorization server
// checks a route of the root with authPolicy p (nil for none), as Contour
// decides: the profile's policy, replaced by the virtual host's when it
// has an authorization (with or without a server of its own), then the
// route's (whose context adds to the one before). Nil without a global
// server.
func (w *walk) globalAuthPolicy(p *contourv1.AuthorizationPolicy) *ir.AuthPolicy {
	g := w.opts.GlobalExtAuth
	if g == nil {
		return nil
	}
	var out ir.AuthPolicy
	if g.AuthPolicy != nil {
		out = ir.AuthPolicy{Disabled: g.AuthPolicy.Disabled, Context: g.AuthPolicy.Context}
	}
	if a := w.root.Spec.VirtualHost.Authorization; a != nil {
		out = ir.AuthPolicy{}
		if a.AuthPolicy != nil {
			out = ir.AuthPolicy{Disabled: a.AuthPolicy.Disabled, Context: a.AuthPolicy.Context}
		}
	}
	if p != nil {
		out.Disabled = p.Disabled
		if len(p.Context) > 0 {
			ctx := maps.Clone(out.Context)
			if ctx == nil {
				ctx = make(map[string]string, len(p.Context))
			}
			maps.Copy(ctx, p.Context)
			out.Context = ctx
		}
	}
	if out.Disabled {
		return unchecked
	}
	return &out
}
