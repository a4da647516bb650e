package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	brotliv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	gzipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	zstdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
)

const (
	compressorFilter = "envoy.filters.http.compressor"
	grpcWebFilter    = "envoy.filters.http.grpc_web"
)

// compressors are the compression libraries of the profile's
// runtimeSettings.http.compression, by their Envoy extension name; a
// Disabled profile has none.
var compressors = map[string]struct {
	name    string
	library func() proto.Message
}{
	"Gzip":     {"envoy.compression.gzip.compressor", func() proto.Message { return &gzipv3.Gzip{} }},
	"Brotli":   {"envoy.compression.brotli.compressor", func() proto.Message { return &brotliv3.Brotli{} }},
	"Zstd":     {"envoy.compression.zstd.compressor", func() proto.Message { return &zstdv3.Zstd{} }},
	"Disabled": {},
}

// compressibleContentTypes are Envoy's default compressible types and
// gRPC-Web's, as Contour lists them: gRPC-Web replies are compressed
// for browsers as other text is.
var compressibleContentTypes = []string{
	"text/html", "text/plain", "text/css", "application/javascript", "application/x-javascript",
	"text/javascript", "text/x-javascript", "text/ecmascript", "text/js", "text/jscript",
	"text/x-js", "application/ecmascript", "application/x-json", "application/xml",
	"application/json", "image/svg+xml", "text/xml", "application/xhtml+xml",
	"application/grpc-web", "application/grpc-web+proto", "application/grpc-web+json", "application/grpc-web+thrift",
	"application/grpc-web-text", "application/grpc-web-text+proto", "application/grpc-web-text+thrift",
}

// compressorHTTPFilter compresses responses with the profile's library;
// nil when compression is disabled. It is the first filter, so that it
// compresses every answer, the ones other filters make included.
func compressorHTTPFilter(s Settings) *hcmv3.HttpFilter {
	c := compressors[s.Compression]
	if c.library == nil {
		return nil
	}
	return &hcmv3.HttpFilter{
		Name: compressorFilter,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&compressorv3.Compressor{
			CompressorLibrary: &corev3.TypedExtensionConfig{Name: c.name, TypedConfig: typed(c.library())},
			ResponseDirectionConfig: &compressorv3.Compressor_ResponseDirectionConfig{
				// content_type_matcher replaces content_type only from
				// Envoy 1.40; the fleets this controller serves may be older.
				CommonConfig: &compressorv3.Compressor_CommonDirectionConfig{ContentType: compressibleContentTypes}, //nolint:staticcheck // see above
			},
		})},
	}
}

// grpcWebHTTPFilter lets browsers call gRPC backends: Envoy turns a
// gRPC-Web request into gRPC and the backend's trailers into gRPC-Web's
// trailer frame. It does nothing to other requests.
func grpcWebHTTPFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       grpcWebFilter,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&grpcwebv3.GrpcWeb{})},
	}
}
