package envoysim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// hcmFieldsKnown are HttpConnectionManager fields the simulator interprets
// or knows not to change routing or the upstream request it models.
var hcmFieldsKnown = []string{
	"rds", "route_config", "http_filters", "strip_any_host_port", "normalize_path", "merge_slashes", "upgrade_configs",
	"stat_prefix", "codec_type", "common_http_protocol_options", "drain_timeout", "max_request_headers_kb",
	"request_headers_timeout", "stream_idle_timeout", "request_timeout", "use_remote_address", "xff_num_trusted_hops",
	"http_protocol_options", "http2_protocol_options", "server_name", "server_header_transformation", "access_log",
	"generate_request_id", "preserve_external_request_id", "delayed_close_timeout", "tracing", "skip_xff_append", "via",
	"add_user_agent", "forward_client_cert_details", "set_current_client_cert_details", "internal_address_config",
	"path_with_escaped_slashes_action", "strip_trailing_host_dot",
}

// normalizePath follows ConnectionManagerUtility::maybeNormalizePath:
// path_with_escaped_slashes_action first, then normalize_path, then
// merge_slashes. A path that cannot be normalized gets 400; one whose
// escaped slashes were unescaped under UNESCAPE_AND_REDIRECT gets a 307
// to the path as normalized (a 400 for a gRPC request, whose clients do
// not follow redirects). done says Envoy answered the request itself.
func (s *Simulator) normalizePath(hcm *hcmv3.HttpConnectionManager, r *httpRequest, a *Answer) (done bool, err error) {
	act := hcm.GetPathWithEscapedSlashesAction()
	redirect := false
	switch act {
	case hcmv3.HttpConnectionManager_IMPLEMENTATION_SPECIFIC_DEFAULT, hcmv3.HttpConnectionManager_KEEP_UNCHANGED:
	case hcmv3.HttpConnectionManager_REJECT_REQUEST, hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT, hcmv3.HttpConnectionManager_UNESCAPE_AND_FORWARD:
		p, found := unescapeSlashes(r.path)
		switch {
		case !found:
		case act == hcmv3.HttpConnectionManager_REJECT_REQUEST:
			return true, s.localReply(a, 400, "Bad Request")
		case act == hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT:
			redirect = true
		}
		r.path = p
	default:
		return true, errUnsupportedf("path_with_escaped_slashes_action %v", act)
	}
	if hcm.GetNormalizePath().GetValue() {
		p, ok := canonicalPath(r.path)
		if !ok {
			return true, s.localReply(a, 400, "Bad Request")
		}
		r.path = p
	}
	if hcm.GetMergeSlashes() {
		r.path = mergeSlashes(r.path)
	}
	if !redirect {
		return false, nil
	}
	if IsGRPC(r.header("content-type")) {
		return true, s.localReply(a, 400, "Bad Request")
	}
	a.Response = &Response{Status: 307, Headers: []Header{{Name: "location", Value: r.path}}}
	return true, nil
}

// http follows the HTTP connection manager: header normalisation, the
// route table (RDS or inline), then the route's action.
func (s *Simulator) http(f *listenerv3.Filter, req Request, peer [][]byte, a *Answer) error {
	hcm, err := unpack[hcmv3.HttpConnectionManager](f.GetTypedConfig(), "http_connection_manager")
	if err != nil {
		return err
	}
	if err := understand(hcm, hcmFieldsKnown...); err != nil {
		return err
	}
	var filters httpFilters
	for i, hf := range hcm.GetHttpFilters() {
		kind := hf.GetName()
		if isExtAuthzFilter(kind) {
			kind = extAuthzFilterName
		}
		switch kind {
		case "envoy.filters.http.router":
			if i != len(hcm.GetHttpFilters())-1 {
				return fmt.Errorf("the router is not the last HTTP filter: Envoy rejects the listener")
			}
		case "envoy.filters.http.cors":
			filters.cors = true
		case compressorFilterName:
			if i != 0 {
				return errUnsupportedf("a compressor that is not the first HTTP filter")
			}
			if filters.compressor, err = compressorFilter(hf); err != nil {
				return err
			}
		case grpcWebFilterName:
			if err := grpcWebFilter(hf); err != nil {
				return err
			}
			filters.grpcWeb = true
		case rbacFilterName:
			if err := rbacFilter(hf); err != nil {
				return err
			}
			filters.rbac = true
		case localRateLimitFilterName:
			if err := localRateLimitFilter(hf); err != nil {
				return err
			}
			filters.localRateLimit = true
		case extAuthzFilterName:
			f, err := extAuthzFilter(hf)
			if err != nil {
				return err
			}
			filters.extAuthz = append(filters.extAuthz, f)
		case luaFilterName:
			if err := luaFilter(hf); err != nil {
				return err
			}
			filters.lua = true
		case jwtAuthnFilterName:
			if filters.jwt, err = jwtAuthnFilter(hf); err != nil {
				return err
			}
		case globalRateLimitFilterName:
			if filters.rateLimit, err = globalRateLimitFilter(hf); err != nil {
				return err
			}
		case statefulSessionFilterName:
			if err := statefulSessionFilter(hf); err != nil {
				return err
			}
			filters.session = true
		default:
			return errUnsupportedf("HTTP filter %s", hf.GetName())
		}
	}
	for _, u := range hcm.GetUpgradeConfigs() {
		if u.GetEnabled() == nil || u.GetEnabled().GetValue() {
			a.Upgrades = append(a.Upgrades, u.GetUpgradeType())
		}
	}
	r := newHTTPRequest(req)
	// HTTP/1.1's codec refuses a chunked request with a Content-Length,
	// unless allow_chunked_length (then it drops the length).
	if hasToken(r.header("transfer-encoding"), "chunked") && r.header("content-length") != "" {
		if !hcm.GetHttpProtocolOptions().GetAllowChunkedLength() {
			return s.localReply(a, 400, "Bad Request")
		}
		r.headers = slices.DeleteFunc(r.headers, func(h Header) bool { return h.Name == "content-length" })
	}
	r.headers = withoutHopByHop(r.headers)
	// The compressor decodes the request first: it keeps the client's
	// Accept-Encoding as sent.
	accept, accepts := lookup(r.headers, "accept-encoding")
	r.client = clientAddressesOf(hcm, req, r.headers)
	if r.authority == "" {
		return fmt.Errorf("the request has no host: Envoy answers 400")
	}
	if done, err := s.normalizePath(hcm, r, a); done || err != nil {
		return err
	}
	if hcm.GetStripAnyHostPort() {
		r.authority = stripPort(r.authority)
	}
	if hcm.GetStripTrailingHostDot() {
		r.authority = stripTrailingDot(r.authority)
	}
	// An edge Envoy sets x-forwarded-proto to the downstream scheme (the
	// other headers it adds, such as x-request-id, are not modelled).
	r.headers = slices.DeleteFunc(r.headers, func(h Header) bool { return h.Name == "x-forwarded-proto" })
	r.headers = append(r.headers, Header{Name: "x-forwarded-proto", Value: r.scheme})
	if err := forwardClientCert(hcm, peer, s.localCertificate(a.DownstreamTLS), r); err != nil {
		return err
	}
	if a.Trace, err = s.traceOf(hcm, r); err != nil {
		return err
	}

	var rc *routev3.RouteConfiguration
	switch {
	case hcm.GetRds() != nil:
		name := hcm.GetRds().GetRouteConfigName()
		if rc = s.routes[name]; rc == nil {
			return fmt.Errorf("route configuration %q is not served: Envoy keeps the listener warming", name)
		}
	case hcm.GetRouteConfig() != nil:
		rc = hcm.GetRouteConfig()
	default:
		return errUnsupportedf("HTTP connection manager without rds or route_config")
	}
	a.RouteConfiguration = rc.GetName()
	if filters.grpcWeb {
		a.GRPCWeb = grpcWebOf(r)
	}
	if err := s.route(rc, r, req, filters, a); err != nil {
		return err
	}
	// The gRPC-Web filter and then the compressor encode last, what
	// every other filter answered.
	if filters.compressor != nil {
		a.encoder = &encoder{compressor: filters.compressor, headersOnly: req.Method == "HEAD"}
		if accepts {
			a.encoder.accept = &accept
		}
	}
	if resp := a.Response; resp != nil {
		// Only direct responses' headers are Envoy's own to the byte.
		if _, ok := lookup(resp.Headers, "content-length"); ok {
			a.Response = a.encode(resp)
		} else if a.GRPCWeb != nil {
			a.Response = a.GRPCWeb.localReply(resp)
		}
	}
	for i := range a.Backends {
		b := &a.Backends[i]
		if a.GRPCWeb != nil {
			b.ResponseHeaders = a.GRPCWeb.response(b.ResponseHeaders)
		}
		if a.encoder != nil {
			b.ResponseHeaders, b.Encoding = a.encoder.respond(b.ResponseHeaders, false)
		}
	}
	return nil
}

// httpFilters are the HTTP filters of a connection manager that routes
// configure, besides the router.
type httpFilters struct {
	cors, localRateLimit, rbac, session, lua, grpcWeb bool
	// compressor is the compressor filter; nil without one.
	compressor *compressor
	// extAuthz are the ext_authz filters, in the chain's order.
	extAuthz []extAuthzInstance
	// rateLimit is the rate limit filter's service; nil without one.
	rateLimit *rateLimitService
	// jwt is the jwt_authn filter; nil without one.
	jwt *jwtFilter
}

// stripPort removes a trailing :port from a host (and keeps IPv6 brackets).
func stripPort(host string) string {
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.HasSuffix(host, "]") {
		return host
	}
	if _, err := strconv.Atoi(host[i+1:]); err != nil {
		return host
	}
	return host[:i]
}

// withoutHopByHop drops the headers that describe one connection, as the
// connection manager does before routing: connection, keep-alive,
// proxy-connection and transfer-encoding, upgrade (and the connection
// header that asks for it) unless the request is an upgrade, and te unless
// it is "trailers" (gRPC's).
func withoutHopByHop(hs []Header) []Header {
	upgrade := upgradeOf(hs) != ""
	return slices.DeleteFunc(hs, func(h Header) bool {
		switch h.Name {
		case "keep-alive", "proxy-connection", "transfer-encoding":
			return true
		case "connection", "upgrade":
			return !upgrade
		case "te":
			return !strings.EqualFold(strings.TrimSpace(h.Value), "trailers")
		}
		return false
	})
}

func valueOf(hs []Header, name string) string {
	var vals []string
	for _, h := range hs {
		if h.Name == name {
			vals = append(vals, h.Value)
		}
	}
	return strings.Join(vals, ",")
}

// stripTrailingDot removes the dot that ends a fully qualified host name
// ("app.example.com." or "app.example.com.:8080"), as
// HeaderUtility::stripTrailingHostDot does.
func stripTrailingDot(host string) string {
	if i := strings.LastIndexByte(host, ':'); i > 0 && !strings.HasSuffix(host, "]") {
		if _, err := strconv.Atoi(host[i+1:]); err == nil {
			return strings.TrimSuffix(host[:i], ".") + host[i:]
		}
	}
	return strings.TrimSuffix(host, ".")
}
