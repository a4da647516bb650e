package xds

import (
	"cmp"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/controller/pkg/ir"
)

// extAuthzFilter is Envoy's external authorization filter. Every
// connection manager has it, disabled: a route with an authorization
// server enables it for its requests and names the server
// (service_override), so that adding one changes the route and not the
// listener. The filter's own service is never asked; Envoy requires one.
//
// Whether a request goes through when the server cannot be asked
// (failure_mode_allow) is the filter's alone, not a route's: a second
// instance, extAuthzFailOpenFilter, allows it, and a route that fails
// open enables that one instead. So are the request headers a check
// carries (allowed_headers): each list the Gateway's routes ask for has
// its two instances, named with the list. Envoy finds a route's
// configuration of a filter by the filter's name in the chain.
const (
	extAuthzFilter         = "envoy.filters.http.ext_authz"
	extAuthzFailOpenFilter = "envoy.filters.http.ext_authz/fail-open"
)

// extAuthzTimeout bounds how long Envoy waits for an authorization
// server's answer; then the request is denied (403).
const extAuthzTimeout = 10 * time.Second

// extAuthzHTTPFilters are a connection manager's ext_authz filters: the
// two every one has, then two for each list of allowed headers.
func extAuthzHTTPFilters(lists [][]string) []*hcmv3.HttpFilter {
	out := make([]*hcmv3.HttpFilter, 0, 2+2*len(lists))
	for _, headers := range append([][]string{nil}, lists...) {
		out = append(out, extAuthzHTTPFilter(false, headers), extAuthzHTTPFilter(true, headers))
	}
	return out
}

// extAuthzFilterName names the ext_authz filter that fails open or not,
// and carries headers (nil: Envoy's default).
func extAuthzFilterName(failOpen bool, headers []string) string {
	name := extAuthzFilter
	if failOpen {
		name = extAuthzFailOpenFilter
	}
	if headers != nil {
		name += "/headers=" + strings.Join(headers, ",")
	}
	return name
}

func extAuthzHTTPFilter(failOpen bool, headers []string) *hcmv3.HttpFilter {
	cfg := &extauthzv3.ExtAuthz{
		TransportApiVersion: corev3.ApiVersion_V3,
		FailureModeAllow:    failOpen,
		Services: &extauthzv3.ExtAuthz_HttpService{HttpService: &extauthzv3.HttpService{ServerUri: &corev3.HttpUri{
			Uri: "http://ext-authz.invalid", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "ext-authz-per-route"},
			Timeout: durationpb.New(extAuthzTimeout),
		}}},
	}
	if headers != nil {
		cfg.AllowedHeaders = exactNames(headers)
	}
	return &hcmv3.HttpFilter{
		Name:       extAuthzFilterName(failOpen, headers),
		Disabled:   true,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(cfg)},
	}
}

// extAuthz enables the filter on a route, with its server; it returns the
// name of the filter instance to enable.
func extAuthz(a *ir.ExtAuth) (string, *routev3.FilterConfig) {
	cs := &extauthzv3.CheckSettings{ContextExtensions: a.Context}
	timeout := durationpb.New(cmp.Or(a.Timeout, extAuthzTimeout))
	if a.GRPC {
		cs.ServiceOverride = &extauthzv3.CheckSettings_GrpcService{GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: a.Cluster, Authority: a.Authority}},
			Timeout:         timeout,
		}}
	} else {
		hs := &extauthzv3.HttpService{
			ServerUri:  &corev3.HttpUri{Uri: "http://" + a.Authority, HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: a.Cluster}, Timeout: timeout},
			PathPrefix: a.PathPrefix,
		}
		// Without a list, every header of the server's answer goes on
		// with the request, as the Gateway API asks.
		upstream := &matcherv3.ListStringMatcher{Patterns: []*matcherv3.StringMatcher{{
			MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: ".*"}},
		}}}
		if len(a.UpstreamHeaders) > 0 {
			upstream = exactNames(a.UpstreamHeaders)
		}
		hs.AuthorizationResponse = &extauthzv3.AuthorizationResponse{AllowedUpstreamHeaders: upstream}
		cs.ServiceOverride = &extauthzv3.CheckSettings_HttpService{HttpService: hs}
	}
	if a.MaxBody > 0 {
		cs.WithRequestBody = &extauthzv3.BufferSettings{MaxRequestBytes: a.MaxBody, AllowPartialMessage: !a.WholeBody, PackAsBytes: a.BodyAsBytes}
	}
	return extAuthzFilterName(a.FailOpen, a.AllowedHeaders), &routev3.FilterConfig{Config: typed(&extauthzv3.ExtAuthzPerRoute{Override: &extauthzv3.ExtAuthzPerRoute_CheckSettings{CheckSettings: cs}})}
}

func exactNames(names []string) *matcherv3.ListStringMatcher {
	out := &matcherv3.ListStringMatcher{}
	for _, n := range names {
		out.Patterns = append(out.Patterns, exact(n))
	}
	return out
}
