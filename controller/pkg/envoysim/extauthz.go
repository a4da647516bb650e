package envoysim

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
)

// extAuthzFilterName is the name of the ext_authz filters the simulator
// knows: it, or it followed by "/" and what sets an instance apart (the
// simulator reads that from the configuration, not the name).
const extAuthzFilterName = "envoy.filters.http.ext_authz"

// isExtAuthzFilter reports whether a filter name is one of the ext_authz
// filters'.
func isExtAuthzFilter(name string) bool {
	return name == extAuthzFilterName || strings.HasPrefix(name, extAuthzFilterName+"/")
}

// extAuthzInstance is one ext_authz filter of a connection manager:
// whether it lets a request through when its server cannot be asked, and
// the request headers its checks carry (nil: Envoy's default).
type extAuthzInstance struct {
	name     string
	failOpen bool
	allowed  []*matcherv3.StringMatcher
}

// extAuthzFilter reads the filter's own configuration: the simulator
// models filters that are disabled unless a route enables them with a
// server of its own.
func extAuthzFilter(hf *hcmv3.HttpFilter) (extAuthzInstance, error) {
	out := extAuthzInstance{name: hf.GetName()}
	if !hf.GetDisabled() {
		return out, errUnsupportedf("an ext_authz filter enabled for every route")
	}
	cfg, err := unpack[extauthzv3.ExtAuthz](hf.GetTypedConfig(), "ext_authz filter")
	if err != nil {
		return out, err
	}
	if err := understand(cfg, "http_service", "grpc_service", "transport_api_version", "failure_mode_allow", "allowed_headers"); err != nil {
		return out, err
	}
	out.failOpen = cfg.GetFailureModeAllow()
	if a := cfg.GetAllowedHeaders(); a != nil {
		out.allowed = a.GetPatterns()
		if out.allowed == nil {
			out.allowed = []*matcherv3.StringMatcher{}
		}
	}
	return out, nil
}

// Authorization is the server Envoy's ext_authz filter asks about a
// request before the route acts on it, and how.
type Authorization struct {
	// GRPC says the server speaks Envoy's gRPC protocol
	// (envoy.service.auth.v3.Authorization); else HTTP.
	GRPC bool `json:"grpc,omitempty"`
	// Server is the server's cluster, with its endpoints.
	Server Backend `json:"server"`
	// Authority is where HTTP checks go (the server_uri's host).
	Authority  string `json:"authority,omitempty"`
	PathPrefix string `json:"pathPrefix,omitempty"`
	// UpstreamHeaders are the matchers of the allowing answer's headers
	// that go on with the request.
	UpstreamHeaders []*matcherv3.StringMatcher `json:"-"`
	// MaxBody is how much of the body a check carries; a longer body is
	// cut there, or refused (413) when WholeBody.
	MaxBody     uint32 `json:"maxBody,omitempty"`
	WholeBody   bool   `json:"wholeBody,omitempty"`
	BodyAsBytes bool   `json:"bodyAsBytes,omitempty"`
	// Context are the route's context_extensions, which gRPC checks
	// carry.
	Context map[string]string `json:"context,omitempty"`
	Timeout time.Duration     `json:"timeout"`
	// FailOpen lets the request through when the server cannot be asked
	// (the filter's failure_mode_allow).
	FailOpen bool `json:"failOpen,omitempty"`
	// AllowedHeaders match the request headers a check carries (the
	// filter's allowed_headers): a gRPC check those alone, an HTTP check
	// those besides the ones it always carries; nil for Envoy's default
	// (every header, those always carried).
	AllowedHeaders []*matcherv3.StringMatcher `json:"-"`

	request *httpRequest
}

// authorizationOf is the server a route's per-filter configuration of
// one of the connection manager's ext_authz filters names; the simulator
// models one enabled filter per route.
func (s *Simulator) authorizationOf(vh *routev3.VirtualHost, rt *routev3.Route, r *httpRequest, filters []extAuthzInstance) (*Authorization, error) {
	var out *Authorization
	for _, f := range filters {
		z, err := s.authorizationBy(vh, rt, r, f.name)
		if err != nil || z == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if out != nil {
			return nil, errUnsupportedf("two ext_authz filters enabled for one route")
		}
		out, z.FailOpen, z.AllowedHeaders = z, f.failOpen, f.allowed
	}
	return out, nil
}

// authorizationBy is the server a route's configuration of the ext_authz
// filter of that name names, nil when it does not enable it.
func (s *Simulator) authorizationBy(vh *routev3.VirtualHost, rt *routev3.Route, r *httpRequest, filter string) (*Authorization, error) {
	cfg := perFilterConfig(vh, rt, filter)
	if cfg == nil {
		return nil, nil
	}
	fc, err := unpack[routev3.FilterConfig](cfg, "ext_authz filter config")
	if err != nil {
		return nil, err
	}
	if err := understand(fc, "config", "disabled"); err != nil {
		return nil, err
	}
	if fc.GetDisabled() {
		return nil, nil
	}
	pr, err := unpack[extauthzv3.ExtAuthzPerRoute](fc.GetConfig(), "ext_authz per route")
	if err != nil {
		return nil, err
	}
	if err := understand(pr, "check_settings", "disabled"); err != nil {
		return nil, err
	}
	if pr.GetDisabled() {
		return nil, nil
	}
	cs := pr.GetCheckSettings()
	if err := understand(cs, "grpc_service", "http_service", "with_request_body", "context_extensions"); err != nil {
		return nil, err
	}
	out := &Authorization{request: r, Context: cs.GetContextExtensions()}
	if b := cs.GetWithRequestBody(); b != nil {
		if err := understand(b, "max_request_bytes", "allow_partial_message", "pack_as_bytes"); err != nil {
			return nil, err
		}
		out.MaxBody, out.WholeBody, out.BodyAsBytes = b.GetMaxRequestBytes(), !b.GetAllowPartialMessage(), b.GetPackAsBytes()
	}
	switch svc := cs.GetServiceOverride().(type) {
	case *extauthzv3.CheckSettings_GrpcService:
		g := svc.GrpcService
		if err := understand(g, "envoy_grpc", "timeout"); err != nil {
			return nil, err
		}
		if err := understand(g.GetEnvoyGrpc(), "cluster_name", "authority"); err != nil {
			return nil, err
		}
		// Envoy's gRPC client names the cluster as the :authority unless
		// told otherwise.
		out.GRPC, out.Server.Cluster = true, g.GetEnvoyGrpc().GetClusterName()
		out.Authority = cmp.Or(g.GetEnvoyGrpc().GetAuthority(), out.Server.Cluster)
		out.Timeout = g.GetTimeout().AsDuration()
	case *extauthzv3.CheckSettings_HttpService:
		h := svc.HttpService
		if err := understand(h, "server_uri", "path_prefix", "authorization_response"); err != nil {
			return nil, err
		}
		if err := understand(h.GetServerUri(), "uri", "cluster", "timeout"); err != nil {
			return nil, err
		}
		out.Server.Cluster, out.PathPrefix = h.GetServerUri().GetCluster(), h.GetPathPrefix()
		out.Authority = strings.TrimPrefix(strings.TrimPrefix(h.GetServerUri().GetUri(), "http://"), "https://")
		out.Timeout = h.GetServerUri().GetTimeout().AsDuration()
		if resp := h.GetAuthorizationResponse(); resp != nil {
			if err := understand(resp, "allowed_upstream_headers"); err != nil {
				return nil, err
			}
			out.UpstreamHeaders = append(out.UpstreamHeaders, resp.GetAllowedUpstreamHeaders().GetPatterns()...)
		}
	default:
		return nil, errUnsupportedf("ext_authz check settings without a service")
	}
	if err := s.upstream(&out.Server, 503); err != nil {
		return nil, err
	}
	if out.GRPC && !out.Server.HTTP2 {
		return nil, fmt.Errorf("ext_authz gRPC service %s does not speak HTTP/2: Envoy's gRPC client cannot use it", out.Server.Cluster)
	}
	return out, nil
}

// alwaysSent are the request headers every HTTP check carries.
var alwaysSent = []string{"authorization", "content-length"}

// allowed reports whether a check carries the request header name, as
// the filter's allowed headers match it (all without a list).
func (z *Authorization) allowed(name string) bool {
	if z.AllowedHeaders == nil {
		return true
	}
	for _, m := range z.AllowedHeaders {
		// The matchers were checked when the filter was read.
		if ok, _ := stringMatches(m, name); ok {
			return true
		}
	}
	return false
}

// CheckHTTP is the request an HTTP check sends the server for body (the
// client's, cut at MaxBody): the request's method, the path prefix and
// path, its host and authorization, the headers the filter allows, and
// the length of the body it carries.
func (z *Authorization) CheckHTTP(body []byte) (*HTTPRequest, []byte) {
	r := z.request
	if uint32(len(body)) > z.MaxBody {
		body = body[:z.MaxBody]
	}
	out := &HTTPRequest{Method: r.method, Scheme: "http", Authority: r.authority, Path: z.PathPrefix + r.path}
	for _, h := range r.headers {
		if h.Name != "content-length" && (slices.Contains(alwaysSent, h.Name) || z.AllowedHeaders != nil && z.allowed(h.Name)) {
			out.Headers = append(out.Headers, h)
		}
	}
	out.Headers = append(out.Headers, Header{Name: "content-length", Value: strconv.Itoa(len(body))})
	return out, body
}

// CheckGRPC is the CheckRequest Envoy sends a gRPC server for body (cut
// at MaxBody), with every header of the request the filter allows.
func (z *Authorization) CheckGRPC(body []byte) *authv3.CheckRequest {
	r := z.request
	if uint32(len(body)) > z.MaxBody {
		body = body[:z.MaxBody]
	}
	headers := map[string]string{}
	for name, v := range map[string]string{":method": r.method, ":path": r.path, ":authority": r.authority, ":scheme": r.scheme} {
		if z.allowed(name) {
			headers[name] = v
		}
	}
	for _, h := range r.headers {
		if !z.allowed(h.Name) {
			continue
		}
		if v, ok := headers[h.Name]; ok {
			headers[h.Name] = v + "," + h.Value
		} else {
			headers[h.Name] = h.Value
		}
	}
	req := &authv3.AttributeContext_HttpRequest{Method: r.method, Path: r.path, Host: r.authority, Scheme: r.scheme, Headers: headers, Protocol: "HTTP/1.1"}
	switch {
	case len(body) == 0:
	case z.BodyAsBytes:
		req.RawBody = body
	default:
		req.Body = string(body)
	}
	attrs := &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{Http: req}, ContextExtensions: z.Context}
	if r.client.err == nil && r.client.peer.IsValid() {
		attrs.Source = &authv3.AttributeContext_Peer{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: r.client.peer.String(),
		}}}}
	}
	return &authv3.CheckRequest{Attributes: attrs}
}

// Verdict is what the filter makes of the server's answer: Denied, the
// client's answer instead of the route's; else the headers the request
// goes on with.
type Verdict struct {
	Denied   *Response
	Upstream []Header
}

// statusOnError is Envoy's answer when the server cannot be asked.
const statusOnError = 403

// Unreachable is the verdict when the server cannot be asked (no
// endpoint, no connection, no answer in time): Envoy fails closed unless
// the filter fails open.
func (z *Authorization) Unreachable() Verdict {
	if z.FailOpen {
		return Verdict{}
	}
	return Verdict{Denied: &Response{Status: statusOnError}}
}

// TooLong is the verdict on a body longer than a check may carry whole:
// Envoy answers 413 without asking the server; nil when the check can be
// made.
func (z *Authorization) TooLong(body []byte) *Verdict {
	if !z.WholeBody || uint32(len(body)) <= z.MaxBody {
		return nil
	}
	return &Verdict{Denied: &Response{Status: 413, Body: "Payload Too Large"}}
}

// HTTPVerdict is the verdict on an HTTP server's answer: 200 allows, with
// the answer's headers that UpstreamHeaders match (none of host); any
// other status is the client's answer, with the server's headers and body.
func (z *Authorization) HTTPVerdict(status int, headers []Header, body string) (Verdict, error) {
	if status != 200 {
		var hs []Header
		for _, h := range headers {
			if n := strings.ToLower(h.Name); n != "host" && n != "content-length" {
				hs = append(hs, Header{Name: n, Value: h.Value})
			}
		}
		return Verdict{Denied: &Response{Status: status, Headers: hs, Body: body}}, nil
	}
	var up []Header
	for _, h := range headers {
		n := strings.ToLower(h.Name)
		if n == "host" || n == "content-length" {
			continue
		}
		for _, m := range z.UpstreamHeaders {
			ok, err := stringMatches(m, n)
			if err != nil {
				return Verdict{}, err
			}
			if ok {
				up = append(up, Header{Name: n, Value: h.Value})
				break
			}
		}
	}
	return Verdict{Upstream: up}, nil
}

// GRPCVerdict is the verdict on a gRPC server's CheckResponse: OK allows,
// with the headers of its ok_response; anything else is denied, with the
// denied_response's status (403 by default), headers and body.
func (z *Authorization) GRPCVerdict(resp *authv3.CheckResponse) Verdict {
	if resp.GetStatus().GetCode() == int32(code.Code_OK) {
		var up []Header
		for _, h := range resp.GetOkResponse().GetHeaders() {
			up = append(up, Header{Name: strings.ToLower(h.GetHeader().GetKey()), Value: h.GetHeader().GetValue()})
		}
		return Verdict{Upstream: up}
	}
	d := resp.GetDeniedResponse()
	status := int(d.GetStatus().GetCode())
	if status == 0 {
		status = statusOnError
	}
	out := &Response{Status: status, Body: d.GetBody()}
	for _, h := range d.GetHeaders() {
		out.Headers = append(out.Headers, Header{Name: strings.ToLower(h.GetHeader().GetKey()), Value: h.GetHeader().GetValue()})
	}
	return Verdict{Denied: out}
}
