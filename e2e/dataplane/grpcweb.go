package dataplane

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"isobar.dev/controller/pkg/envoysim"
)

// grpcWebTrailerFlag marks gRPC-Web's trailer frame.
const grpcWebTrailerFlag = 0x80

// isGRPCResponse is whether the gRPC-Web filter passes a backend's
// answer on as gRPC: a 200 whose Content-Type is gRPC's or gRPC-Web's
// (proto); others become a status and a message.
func isGRPCResponse(resp *http.Response) bool {
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(ct)
	grpc := envoysim.IsGRPC(ct)
	web := strings.EqualFold(ct, "application/grpc-web") || strings.EqualFold(ct, "application/grpc-web+proto")
	return resp.StatusCode == http.StatusOK && (grpc || web)
}

// grpcWebBody is the backend's gRPC body as a gRPC-Web client gets it:
// the messages as they are, then the trailers as the last frame (lines
// "name:value\r\n", names lower case); all of it base64-encoded frame
// by frame for a client that asked for text. A trailers-only answer
// (its status in the headers) has no trailer frame.
//
// The caller closes the reader: a client gone mid-answer stops the
// copying.
func grpcWebBody(resp *http.Response, g *envoysim.GRPCWeb) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		var frame bytes.Buffer
		write := func(b []byte) error {
			if g.TextResponse {
				b = []byte(base64.StdEncoding.EncodeToString(b))
			}
			_, err := pw.Write(b)
			return err
		}
		for {
			frame.Reset()
			if _, err := io.CopyN(&frame, resp.Body, 5); err != nil {
				break
			}
			n := binary.BigEndian.Uint32(frame.Bytes()[1:5])
			if _, err := io.CopyN(&frame, resp.Body, int64(n)); err != nil {
				break
			}
			if write(frame.Bytes()) != nil {
				return
			}
		}
		if len(resp.Trailer) > 0 {
			var t bytes.Buffer
			for k, vv := range resp.Trailer {
				for _, v := range vv {
					t.WriteString(strings.ToLower(k) + ":" + v + "\r\n")
				}
			}
			head := []byte{grpcWebTrailerFlag, 0, 0, 0, 0}
			binary.BigEndian.PutUint32(head[1:], uint32(t.Len()))
			_ = write(append(head, t.Bytes()...))
		}
		pw.Close()
	}()
	return pr
}

// nonGRPCToGRPCWeb is the gRPC-Web filter's answer when the backend's is
// not gRPC: its status and (up to a limit) body become grpc-status and
// grpc-message, and the body goes.
func nonGRPCToGRPCWeb(w http.ResponseWriter, resp *http.Response) {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	w.Header().Set("Grpc-Status", strconv.Itoa(int(grpcCode(resp.StatusCode))))
	w.Header().Set("Grpc-Message", url.PathEscape(string(msg)))
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(resp.StatusCode)
}
