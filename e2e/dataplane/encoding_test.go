package dataplane

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	brotliv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	gzipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"isobar.dev/e2e/harness"
)

// withFront puts the compressor (with library lib) and the gRPC-Web
// filter in front of a listener's filters, as the translator does.
func withFront(t *testing.T, l *hcmv3.HttpConnectionManager, lib proto.Message) *hcmv3.HttpConnectionManager {
	t.Helper()
	comp := &hcmv3.HttpFilter{Name: "envoy.filters.http.compressor", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &compressorv3.Compressor{
		CompressorLibrary: &corev3.TypedExtensionConfig{Name: "lib", TypedConfig: typed(t, lib)},
		ResponseDirectionConfig: &compressorv3.Compressor_ResponseDirectionConfig{
			// As the translator sends it, for Envoys before 1.40.
			CommonConfig: &compressorv3.Compressor_CommonDirectionConfig{ContentType: []string{"application/json", "text/plain"}}, //nolint:staticcheck // see above
		},
	})}}
	web := &hcmv3.HttpFilter{Name: "envoy.filters.http.grpc_web", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(t, &grpcwebv3.GrpcWeb{})}}
	l.HttpFilters = append([]*hcmv3.HttpFilter{comp, web}, l.HttpFilters...)
	return l
}

// frontEnvoy is a simulated Envoy on a port of its own whose one route
// goes to backend, with the compressor and the gRPC-Web filter.
func frontEnvoy(t *testing.T, lib proto.Message, backendHTTP2 bool, handler http.HandlerFunc) int {
	t.Helper()
	addr := backend(t, func(p *http.Protocols) { p.SetHTTP1(true); p.SetUnencryptedHTTP2(true) }, handler)
	port := harness.FreePort(t)
	base := httpListenerOn(t, port, 5*time.Second)
	hcm := &hcmv3.HttpConnectionManager{}
	if err := base.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	staticEnvoy(t, hcmListener(t, "test", port, withFront(t, hcm, lib)), backendCluster(t, addr, backendHTTP2))
	get(t, port, "/")
	return port
}

// A response is compressed, really, for a client that accepts the
// library's coding, and decodes to what the backend sent; a client that
// does not gets it as it was, with Vary telling caches both exist.
func TestResponsesAreCompressed(t *testing.T) {
	doc := strings.Repeat(`{"message":"hello"}`, 200)
	handler := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"v1"`)
		fmt.Fprint(w, doc)
	}
	for _, tc := range []struct {
		name   string
		lib    proto.Message
		coding string
		decode func(io.Reader) (io.Reader, error)
	}{
		{"gzip", &gzipv3.Gzip{}, "gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"brotli", &brotliv3.Brotli{}, "br", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := frontEnvoy(t, tc.lib, false, handler)
			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/doc"
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Accept-Encoding", "gzip, br")
			// The transport must not decompress: the test reads the
			// bytes Envoy sent.
			resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if got := resp.Header.Get("Content-Encoding"); got != tc.coding {
				t.Fatalf("Content-Encoding %q, want %q", got, tc.coding)
			}
			if resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("ETag") != "" || resp.ContentLength != -1 {
				t.Errorf("Vary %q, ETag %q, length %d: want Accept-Encoding, no strong ETag, no length", resp.Header.Get("Vary"), resp.Header.Get("ETag"), resp.ContentLength)
			}
			if len(raw) >= len(doc) {
				t.Errorf("%d bytes compressed to %d", len(doc), len(raw))
			}
			r, err := tc.decode(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if plain, err := io.ReadAll(r); err != nil || string(plain) != doc {
				t.Errorf("the body decodes to %d bytes (%v), want the backend's %d", len(plain), err, len(doc))
			}

			req.Header.Del("Accept-Encoding")
			resp, err = (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ = io.ReadAll(resp.Body)
			if resp.Header.Get("Content-Encoding") != "" || string(raw) != doc || resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("ETag") != `"v1"` {
				t.Errorf("without Accept-Encoding: Content-Encoding %q, %d bytes, Vary %q, ETag %q; want the backend's body and ETag, Vary: Accept-Encoding",
					resp.Header.Get("Content-Encoding"), len(raw), resp.Header.Get("Vary"), resp.Header.Get("ETag"))
			}
		})
	}
}

// A gRPC-Web call reaches a gRPC backend as gRPC (over HTTP/2, with its
// body base64-decoded for a text call), and the client gets the messages
// and then the trailers as gRPC-Web's last frame.
func TestGRPCWebCallsReachGRPCBackends(t *testing.T) {
	frame := func(flag byte, payload []byte) []byte {
		b := []byte{flag, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
		return append(b, payload...)
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			return
		}
		in, _ := io.ReadAll(r.Body)
		if r.ProtoMajor != 2 || r.Header.Get("Content-Type") != "application/grpc" || r.Header.Get("Te") != "trailers" || len(in) < 5 {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "3")
			w.Header().Set("Grpc-Message", fmt.Sprintf("%s %q %q %d bytes", r.Proto, r.Header.Get("Content-Type"), r.Header.Get("Te"), len(in)))
			return
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		_, _ = w.Write(frame(0, append([]byte("echo:"), in[5:]...)))
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set("Grpc-Message", "ok")
	}
	port := frontEnvoy(t, &gzipv3.Gzip{}, true, handler)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/echo.Echo/Say"
	for _, text := range []bool{false, true} {
		t.Run(fmt.Sprintf("text=%t", text), func(t *testing.T) {
			body, ct := frame(0, []byte("hi")), "application/grpc-web+proto"
			if text {
				body, ct = []byte(base64.StdEncoding.EncodeToString(body)), "application/grpc-web-text"
			}
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			if text {
				req.Header.Set("Accept", "application/grpc-web-text")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Grpc-Status") != "" {
				t.Fatalf("status %d, grpc-status %q (%s): want 200 with the status in the body", resp.StatusCode, resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message"))
			}
			wantType := "application/grpc-web+proto"
			if text {
				wantType = "application/grpc-web-text+proto"
				var decoded []byte
				// Each frame is base64 on its own.
				for rest := string(raw); rest != ""; {
					end := strings.Index(rest, "=")
					for end >= 0 && end+1 < len(rest) && rest[end+1] == '=' {
						end++
					}
					chunk := rest
					if end >= 0 {
						chunk, rest = rest[:end+1], rest[end+1:]
					} else {
						rest = ""
					}
					d, err := base64.StdEncoding.DecodeString(chunk)
					if err != nil {
						t.Fatalf("body %q: %v", raw, err)
					}
					decoded = append(decoded, d...)
				}
				raw = decoded
			}
			if got := resp.Header.Get("Content-Type"); got != wantType {
				t.Errorf("Content-Type %q, want %q", got, wantType)
			}
			want := append(frame(0, []byte("echo:hi")), frame(0x80, []byte("grpc-message:ok\r\ngrpc-status:0\r\n"))...)
			alt := append(frame(0, []byte("echo:hi")), frame(0x80, []byte("grpc-status:0\r\ngrpc-message:ok\r\n"))...)
			if !bytes.Equal(raw, want) && !bytes.Equal(raw, alt) {
				t.Errorf("body %q, want %q", raw, want)
			}
		})
	}
}
