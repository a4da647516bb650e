package envoysim

import (
	"slices"
	"strconv"
	"strings"

	brotliv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	gzipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	zstdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
)

const compressorFilterName = "envoy.filters.http.compressor"

// compressor is a compressor filter's response direction.
type compressor struct {
	// encoding is the content coding of its library: gzip, br or zstd.
	encoding string
	// types are the compressible content types, lower case.
	types     map[string]bool
	minLength uint64
}

// encodings are the content codings of the compression libraries; the
// libraries' settings (levels, windows) change the bytes, not what a
// client decodes.
var encodings = map[string]string{
	string(proto.MessageName(&gzipv3.Gzip{})):     "gzip",
	string(proto.MessageName(&brotliv3.Brotli{})): "br",
	string(proto.MessageName(&zstdv3.Zstd{})):     "zstd",
}

// compressorFilter reads a compressor filter that compresses responses
// only, as Envoy's CompressorFilterConfig does.
func compressorFilter(hf *hcmv3.HttpFilter) (*compressor, error) {
	cfg, err := unpack[compressorv3.Compressor](hf.GetTypedConfig(), "compressor filter")
	if err != nil {
		return nil, err
	}
	if err := understand(cfg, "compressor_library", "response_direction_config"); err != nil {
		return nil, err
	}
	lib := cfg.GetCompressorLibrary().GetTypedConfig()
	name := strings.TrimPrefix(lib.GetTypeUrl(), "type.googleapis.com/")
	enc, ok := encodings[name]
	if !ok {
		return nil, errUnsupportedf("compression library %s", name)
	}
	rd := cfg.GetResponseDirectionConfig()
	if err := understand(rd, "common_config"); err != nil {
		return nil, err
	}
	cc := rd.GetCommonConfig()
	if err := understand(cc, "content_type", "min_content_length"); err != nil {
		return nil, err
	}
	c := &compressor{encoding: enc, types: map[string]bool{}, minLength: 30}
	if n := cc.GetMinContentLength(); n != nil {
		c.minLength = uint64(n.GetValue())
	}
	types := cc.GetContentType()
	if len(types) == 0 {
		types = defaultCompressibleTypes
	}
	for _, t := range types {
		c.types[strings.ToLower(t)] = true
	}
	return c, nil
}

// defaultCompressibleTypes are Envoy's, for a filter that lists none.
var defaultCompressibleTypes = []string{
	"text/html", "text/plain", "text/css", "application/javascript", "application/x-javascript",
	"text/javascript", "text/x-javascript", "text/ecmascript", "text/js", "text/jscript",
	"text/x-js", "application/ecmascript", "application/x-json", "application/xml",
	"application/json", "image/svg+xml", "text/xml", "application/xhtml+xml",
}

// respond follows CompressorFilter::encodeHeaders for an answer with
// headers, to a request whose Accept-Encoding is accept (nil: none),
// that ends with its headers (a HEAD request, or no body) when
// headersOnly. It gives the headers the client gets and the content
// coding Envoy compresses the body with ("" for none).
//
// An answer is compressible when it is big enough (a Content-Length of
// at least the minimum, or chunked), no upgrade, of a compressible type
// (or none), without Cache-Control: no-transform and not encoded
// already. A compressible answer gets Vary: Accept-Encoding whether it
// is compressed or not, so that a cache in front of Envoy keeps both
// forms. It is compressed when the client's Accept-Encoding chooses the
// filter's coding, it has a body, and its Transfer-Encoding names no
// compression; then a strong ETag goes (it names the uncompressed bytes)
// and so does Content-Length.
func (c *compressor) respond(accept *string, headers []Header, headersOnly bool) ([]Header, string) {
	compressible := c.bigEnough(headers) && valueOf(headers, "upgrade") == "" && c.typeAllowed(headers) &&
		!hasToken(valueOf(headers, "cache-control"), "no-transform") && valueOf(headers, "content-encoding") == ""
	if !compressible {
		return headers, ""
	}
	enc := ""
	if !headersOnly && accept != nil && c.chosen(*accept) && transferEncodingAllowed(valueOf(headers, "transfer-encoding"), c.encoding) {
		enc = c.encoding
		out := headers[:0:0]
		for _, h := range headers {
			switch {
			case h.Name == "content-length":
			case h.Name == "etag" && strongETag(h.Value):
			default:
				out = append(out, h)
			}
		}
		headers = append(out, Header{Name: "content-encoding", Value: enc})
	}
	return varyAcceptEncoding(headers), enc
}

// strongETag is sanitizeEtagHeader's test: anything but W/"...".
func strongETag(v string) bool {
	return len(v) > 2 && !((v[0] == 'W' || v[0] == 'w') && v[1] == '/')
}

// bigEnough is isMinimumContentLength: a Content-Length of at least the
// minimum or, without one, a chunked body.
func (c *compressor) bigEnough(headers []Header) bool {
	if v, ok := lookup(headers, "content-length"); ok {
		n, err := strconv.ParseUint(v, 10, 64)
		return err == nil && n >= c.minLength
	}
	return hasToken(valueOf(headers, "transfer-encoding"), "chunked")
}

// typeAllowed: a response without a Content-Type is compressible.
func (c *compressor) typeAllowed(headers []Header) bool {
	ct := valueOf(headers, "content-type")
	if ct == "" {
		return true
	}
	ct, _, _ = strings.Cut(ct, ";")
	return c.types[strings.ToLower(strings.TrimSpace(ct))]
}

// chosen is chooseEncoding for a chain of one compressor: among the
// client's codings (q=1 unless given; an unparsable q drops the token),
// the highest q of this filter's, identity and "*" wins; a q of 0 for
// this filter's coding rules it out, "*" included.
func (c *compressor) chosen(accept string) bool {
	type pair struct {
		coding string
		q      float64
	}
	var pairs []pair
	allowed := true
	for _, token := range strings.Split(accept, ",") {
		if strings.TrimSpace(token) == "" {
			continue
		}
		coding, params, hasParams := strings.Cut(token, ";")
		p := pair{strings.TrimSpace(coding), 1}
		if hasParams {
			if k, v, ok := strings.Cut(params, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
				if err != nil {
					continue
				}
				p.q = q
			}
		}
		pairs = append(pairs, p)
		if p.q == 0 && p.coding == c.encoding {
			allowed = false
		}
	}
	if len(pairs) == 0 || !allowed {
		return false
	}
	choice := pair{"identity", 0}
	for _, p := range pairs {
		if (p.coding == c.encoding || p.coding == "identity" || p.coding == "*") && p.q > choice.q {
			choice = p
		}
	}
	return choice.q > 0 && (choice.coding == c.encoding || choice.coding == "*")
}

// transferEncodingAllowed: a body already compressed in transfer is not
// compressed again.
func transferEncodingAllowed(te, encoding string) bool {
	for _, v := range strings.Split(te, ",") {
		v = strings.TrimSpace(v)
		if strings.EqualFold(v, encoding) || strings.EqualFold(v, "gzip") || strings.EqualFold(v, "deflate") {
			return false
		}
	}
	return true
}

// varyAcceptEncoding adds Accept-Encoding to Vary, once.
func varyAcceptEncoding(headers []Header) []Header {
	for i, h := range headers {
		if h.Name != "vary" {
			continue
		}
		if hasToken(h.Value, "accept-encoding") {
			return headers
		}
		out := append(headers[:0:0], headers...)
		out[i].Value += ", Accept-Encoding"
		return out
	}
	return append(headers[:len(headers):len(headers)], Header{Name: "vary", Value: "Accept-Encoding"})
}

// hasToken says whether a comma-separated header value holds token,
// ignoring case.
func hasToken(value, token string) bool {
	for _, v := range strings.Split(value, ",") {
		if strings.EqualFold(strings.TrimSpace(v), token) {
			return true
		}
	}
	return false
}

// lookup is a header's first value, and whether it is there.
func lookup(headers []Header, name string) (string, bool) {
	for _, h := range headers {
		if h.Name == name {
			return h.Value, true
		}
	}
	return "", false
}

// encoder is the compressor's view of one request: its Accept-Encoding
// (nil: none), and whether every answer ends with its headers (HEAD).
type encoder struct {
	compressor  *compressor
	accept      *string
	headersOnly bool
}

func (e *encoder) respond(headers []Header, noBody bool) ([]Header, string) {
	return e.compressor.respond(e.accept, headers, e.headersOnly || noBody)
}

// Reply is what the client gets of an answer Envoy makes up itself while
// it handles the request (no healthy upstream, a timeout, a denial): the
// body's length, text/plain for a body, then what the gRPC-Web filter
// and the compressor make of it.
func (a *Answer) Reply(r *Response) *Response {
	out := *r
	if _, ok := lookup(out.Headers, "content-length"); !ok {
		out.Headers = append(slices.Clone(out.Headers), Header{Name: "content-length", Value: strconv.Itoa(len(out.Body))})
		if _, ok := lookup(out.Headers, "content-type"); !ok && out.Body != "" {
			out.Headers = append(out.Headers, Header{Name: "content-type", Value: "text/plain"})
		}
	}
	return a.encode(&out)
}

// encode applies the gRPC-Web filter's and the compressor's changes to
// a local reply with Envoy's headers.
func (a *Answer) encode(r *Response) *Response {
	if a.GRPCWeb != nil {
		r = a.GRPCWeb.localReply(r)
	}
	if a.encoder != nil {
		out := *r
		out.Headers, out.Encoding = a.encoder.respond(r.Headers, r.Body == "")
		r = &out
	}
	return r
}
