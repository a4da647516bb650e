package envoysim

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

const grpcWebFilterName = "envoy.filters.http.grpc_web"

// grpcWebContentTypes are the gRPC-Web requests Envoy's filter
// translates, by their exact Content-Type, and whether the body is
// base64 text.
var grpcWebContentTypes = map[string]bool{
	"application/grpc-web":            false,
	"application/grpc-web+proto":      false,
	"application/grpc-web-text":       true,
	"application/grpc-web-text+proto": true,
}

func grpcWebFilter(hf *hcmv3.HttpFilter) error {
	cfg, err := unpack[grpcwebv3.GrpcWeb](hf.GetTypedConfig(), "gRPC-Web filter")
	if err != nil {
		return err
	}
	return understand(cfg)
}

// GRPCWeb is how Envoy translates a gRPC-Web call: the backend gets it as
// gRPC (the body base64-decoded when Text), and the client gets the
// backend's answer as gRPC-Web, its trailers as the body's last frame
// (the body base64-encoded when TextResponse). An answer that is not
// gRPC becomes gRPC's status and message in headers, with an empty body.
type GRPCWeb struct {
	Text         bool `json:"text,omitempty"`
	TextResponse bool `json:"textResponse,omitempty"`
}

// ContentType is the Content-Type the client gets.
func (g *GRPCWeb) ContentType() string {
	if g.TextResponse {
		return "application/grpc-web-text+proto"
	}
	return "application/grpc-web+proto"
}

// grpcWebOf is GrpcWebFilter::isGrpcWebRequest: nil for a request that
// is not a gRPC-Web call.
func grpcWebOf(r *httpRequest) *GRPCWeb {
	text, ok := grpcWebContentTypes[r.header("content-type")]
	if !ok {
		return nil
	}
	accept := r.header("accept")
	return &GRPCWeb{Text: text, TextResponse: accept == "application/grpc-web-text" || accept == "application/grpc-web-text+proto"}
}

// request follows GrpcWebFilter::decodeHeaders on the route's request:
// the route was chosen by the Content-Type the client sent (the filter
// resolves it before it changes the headers), the filters after it and
// the backend see gRPC.
func (g *GRPCWeb) request(r *httpRequest) {
	r.headers = slices.DeleteFunc(r.headers, func(h Header) bool {
		return h.Name == "content-length" || h.Name == "content-type" || h.Name == "te"
	})
	r.headers = append(r.headers, Header{Name: "content-type", Value: "application/grpc"}, Header{Name: "te", Value: "trailers"})
	if _, ok := lookup(r.headers, "grpc-accept-encoding"); !ok {
		r.headers = append(r.headers, Header{Name: "grpc-accept-encoding", Value: "identity"})
	}
}

// grpcWebResponse is GrpcWebFilter::encodeHeaders: the client gets the
// gRPC-Web content type. A local reply is not gRPC: its status and body
// become grpc-status and grpc-message, and its body goes.
func (g *GRPCWeb) response(headers []Header) []Header {
	out := slices.DeleteFunc(slices.Clone(headers), func(h Header) bool { return h.Name == "content-type" })
	return append(out, Header{Name: "content-type", Value: g.ContentType()})
}

// localReply is Envoy's own answer to a gRPC-Web call: not gRPC, so the
// filter moves its status and body into grpc-status and grpc-message
// (Grpc::Utility::httpToGrpcStatus) and empties the body.
func (g *GRPCWeb) localReply(r *Response) *Response {
	out := *r
	code := r.GRPCStatus
	if code == 0 {
		code = httpToGRPCStatus(r.Status)
	}
	out.Headers = slices.DeleteFunc(slices.Clone(r.Headers), func(h Header) bool {
		return h.Name == "content-length" || h.Name == "grpc-status" || h.Name == "grpc-message"
	})
	out.Headers = g.response(append(out.Headers,
		Header{Name: "grpc-status", Value: strconv.Itoa(code)},
		Header{Name: "grpc-message", Value: url.PathEscape(r.Body)},
		Header{Name: "content-length", Value: "0"}))
	out.Body = ""
	return &out
}

// httpToGRPCStatus is Grpc::Utility::httpToGrpcStatus.
func httpToGRPCStatus(status int) int {
	switch status {
	case 400:
		return 13 // Internal
	case 401:
		return 16 // Unauthenticated
	case 403:
		return 7 // PermissionDenied
	case 404:
		return 12 // Unimplemented
	case 429, 502, 503, 504:
		return 14 // Unavailable
	}
	return 2 // Unknown
}

// IsGRPC is Grpc::Common::hasGrpcContentType: a request Envoy treats as
// gRPC (and answers in gRPC's terms when it answers itself) has the
// Content-Type application/grpc, or application/grpc+ a suffix; gRPC-Web's
// is not.
func IsGRPC(contentType string) bool {
	return contentType == "application/grpc" || strings.HasPrefix(contentType, "application/grpc+")
}
