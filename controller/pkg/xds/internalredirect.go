package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previousroutesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/previous_routes/v3"
	safecrossschemev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/safe_cross_scheme/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"isobar.dev/controller/pkg/ir"
)

// internalRedirect is a route's internal redirect policy, with Envoy's
// predicates for what Contour's policy refuses to follow: a redirect from
// http to https (SafeOnly) and one to a route a previous redirect from
// this route went to.
func internalRedirect(p *ir.InternalRedirect) *routev3.InternalRedirectPolicy {
	out := &routev3.InternalRedirectPolicy{RedirectResponseCodes: p.Codes, AllowCrossSchemeRedirect: p.CrossScheme == "Always" || p.CrossScheme == "SafeOnly"}
	if p.Max > 0 {
		out.MaxInternalRedirects = wrapperspb.UInt32(p.Max)
	}
	if p.CrossScheme == "SafeOnly" {
		out.Predicates = append(out.Predicates, &corev3.TypedExtensionConfig{
			Name: "envoy.internal_redirect_predicates.safe_cross_scheme", TypedConfig: typed(&safecrossschemev3.SafeCrossSchemeConfig{}),
		})
	}
	if p.DenyRepeated {
		out.Predicates = append(out.Predicates, &corev3.TypedExtensionConfig{
			Name: "envoy.internal_redirect_predicates.previous_routes", TypedConfig: typed(&previousroutesv3.PreviousRoutesConfig{}),
		})
	}
	return out
}
