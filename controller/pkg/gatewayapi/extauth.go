package gatewayapi

import (
	"cmp"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/ir"
)

// ConditionExternalAuthorization says, on a Gateway whose profile has a
// global authorization server, whether its Envoys can ask it.
const ConditionExternalAuthorization gatewayv1.GatewayConditionType = "isobar.dev/ExternalAuthorization"

// defaultMaxRequestBytes is how much of a body a check carries when the
// profile does not say, as Contour has it.
const defaultMaxRequestBytes = 1024

// globalExtAuth resolves the profile's global authorization server for
// every route: its cluster (one without endpoints when the
// ExtensionService cannot be used, which the Gateway's status says; its
// checks then fail, and requests are denied unless failOpen) and the
// default policy.
func (t *gatewayTranslator) globalExtAuth() (a *ir.GlobalExtAuth, problem string) {
	s := t.profile.GlobalExtAuth
	if s == nil {
		return nil, ""
	}
	cluster, authority, timeout, problem := t.extensionServer(s.ExtensionService, "extauth")
	a = &ir.GlobalExtAuth{Server: ir.ExtAuth{GRPC: true, Cluster: cluster, Authority: authority, Timeout: timeout, FailOpen: s.FailOpen}}
	if s.ResponseTimeout != nil {
		a.Server.Timeout = s.ResponseTimeout.Duration
	}
	if p := s.AuthPolicy; p != nil {
		a.Disabled, a.Server.Context = p.Disabled, p.Context
	}
	if b := s.WithRequestBody; b != nil {
		a.Server.MaxBody = cmp.Or(b.MaxRequestBytes, defaultMaxRequestBytes)
		a.Server.WholeBody, a.Server.BodyAsBytes = !b.AllowPartialMessage, b.PackAsBytes
	}
	return a, problem
}

// setExtAuthCondition says whether the Gateway's routes can be checked;
// problem, from globalExtAuth, says why not; a Gateway without a global
// authorization server has no such condition.
func (t *gatewayTranslator) setExtAuthCondition(c *gatewayConditions, problem string) {
	switch s := t.profile.GlobalExtAuth; {
	case s == nil:
	case problem != "" && s.FailOpen:
		c.Set(ConditionExternalAuthorization, false, "ExtensionServiceNotUsable", "runtimeSettings.globalExtAuth: "+problem+"; requests go through unchecked (failOpen)")
	case problem != "":
		c.Set(ConditionExternalAuthorization, false, "ExtensionServiceNotUsable", "runtimeSettings.globalExtAuth: "+problem+"; requests it would check are denied (403)")
	default:
		c.Set(ConditionExternalAuthorization, true, "Checked", "ExtensionService "+s.ExtensionService.Namespace+"/"+s.ExtensionService.Name+" checks the requests of every route that does not opt out")
	}
}
