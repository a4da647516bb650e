package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/controller/pkg/ir"
)

// jwtAuthnFilter is Envoy's JWT verification filter. A connection
// manager has it when a virtual host of its route table has JWT
// providers: the filter holds them, each with a requirement of its name,
// and a route requires a token of one by naming it (requirement_name).
// Routes that name none are not verified.
const jwtAuthnFilter = "envoy.filters.http.jwt_authn"

// jwtProvidersOf are the JWT providers of a route table's virtual hosts.
func jwtProvidersOf(t *ir.RouteTable) []ir.JWTProvider {
	var out []ir.JWTProvider
	if t == nil {
		return nil
	}
	for _, vh := range t.VirtualHosts {
		if vh.Policy != nil {
			out = append(out, vh.Policy.JWTProviders...)
		}
	}
	return out
}

// jwtAuthnHTTPFilter is the filter verifying tokens of providers; nil for
// none.
func jwtAuthnHTTPFilter(providers []ir.JWTProvider) *hcmv3.HttpFilter {
	if len(providers) == 0 {
		return nil
	}
	cfg := &jwtv3.JwtAuthentication{
		Providers:      make(map[string]*jwtv3.JwtProvider, len(providers)),
		RequirementMap: make(map[string]*jwtv3.JwtRequirement, len(providers)),
	}
	for _, p := range providers {
		remote := &jwtv3.RemoteJwks{HttpUri: &corev3.HttpUri{
			Uri:              p.JWKS.URI,
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: p.JWKS.Cluster},
			Timeout:          durationpb.New(p.JWKS.Timeout),
		}}
		if p.JWKS.CacheDuration > 0 {
			remote.CacheDuration = durationpb.New(p.JWKS.CacheDuration)
		}
		cfg.Providers[p.Name] = &jwtv3.JwtProvider{
			Issuer:              p.Issuer,
			Audiences:           p.Audiences,
			Forward:             p.Forward,
			JwksSourceSpecifier: &jwtv3.JwtProvider_RemoteJwks{RemoteJwks: remote},
		}
		cfg.RequirementMap[p.Name] = &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: p.Name}}
	}
	return &hcmv3.HttpFilter{Name: jwtAuthnFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(cfg)}}
}

// jwtRequirement makes a route require a valid token of the provider.
func jwtRequirement(provider string) *jwtv3.PerRouteConfig {
	return &jwtv3.PerRouteConfig{RequirementSpecifier: &jwtv3.PerRouteConfig_RequirementName{RequirementName: provider}}
}
