// Package authzserver is an external authorization server speaking
// Envoy's gRPC protocol (envoy.service.auth.v3.Authorization), which the
// e2e tests run as a real server: the data plane's tests in process, the
// fleet's as a Pod (cmd/authz-server).
package authzserver

import (
	"context"
	"maps"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
)

// Allowed is the authorization header of the requests the server allows.
const Allowed = "Bearer alice"

// Server allows the requests whose authorization is Allowed, adding who
// the user is (x-auth-user: "alice (grpc)"), the check's context
// (x-auth-context: "k=v,..." sorted) and what it carried of the body
// (x-auth-body: the body and "(string)" or "(bytes)"), and denies the
// others with 401 and "who are you?".
type Server struct {
	authv3.UnimplementedAuthorizationServer
}

// Check answers one check.
func (Server) Check(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	attrs := req.GetAttributes()
	h := attrs.GetRequest().GetHttp()
	if h.GetHeaders()["authorization"] != Allowed {
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(code.Code_PERMISSION_DENIED)}, HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}, Body: "who are you?",
		}}}, nil
	}
	set := []*corev3.HeaderValueOption{header("x-auth-user", "alice (grpc)")}
	if ctx := attrs.GetContextExtensions(); len(ctx) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(ctx)) {
			kv = append(kv, k+"="+ctx[k])
		}
		set = append(set, header("x-auth-context", strings.Join(kv, ",")))
	}
	if body := h.GetBody(); body != "" {
		set = append(set, header("x-auth-body", body+" (string)"))
	}
	if raw := h.GetRawBody(); len(raw) > 0 {
		set = append(set, header("x-auth-body", string(raw)+" (bytes)"))
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(code.Code_OK)}, HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
		Headers: set,
	}}}, nil
}

func header(name, value string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: name, Value: value}}
}
