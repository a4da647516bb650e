package conformance

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	pb "sigs.k8s.io/gateway-api/conformance/echo-basic/grpcechoserver"
	confgrpc "sigs.k8s.io/gateway-api/conformance/utils/grpc"

	"isobar.dev/controller/pkg/envoysim"
)

// grpcClient sends the suite's RPCs to the simulated Envoy of the Gateway
// at the address, and answers as the suite's gRPC echo backend would.
type grpcClient struct {
	fleet *fleet
}

var _ confgrpc.Client = (*grpcClient)(nil)

const echoService = "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/"

func (c *grpcClient) SendRPC(_ *testing.T, address string, expected confgrpc.ExpectedResponse, timeout time.Duration) (*confgrpc.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return &confgrpc.Response{}, err
	}
	envoy, envoyPort, err := c.fleet.envoyAt(ctx, host, port, "http")
	if err != nil {
		return &confgrpc.Response{}, err
	}
	sim, err := envoy.Simulator()
	if err != nil {
		return &confgrpc.Response{}, err
	}
	method, req := "EchoThree", expected.EchoThreeRequest
	switch {
	case expected.EchoRequest != nil:
		method, req = "Echo", expected.EchoRequest
	case expected.EchoTwoRequest != nil:
		method, req = "EchoTwo", expected.EchoTwoRequest
	}
	in := envoysim.Request{
		Port: envoyPort, Method: "POST", Scheme: "http", Authority: address, Path: echoService + method,
		Headers: []envoysim.Header{{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"}},
		Seed:    rand.Uint64(),
	}
	if md := expected.RequestMetadata; md != nil {
		if md.Authority != "" {
			in.Authority = md.Authority
		}
		for k, v := range md.Metadata {
			in.Headers = append(in.Headers, envoysim.Header{Name: k, Value: v})
		}
	}
	a, err := sim.Simulate(in)
	if err != nil {
		return &confgrpc.Response{}, err
	}
	resp := &confgrpc.Response{Headers: &metadata.MD{}, Trailers: &metadata.MD{}}
	if a.Response != nil {
		// Envoy answers a gRPC request it does not forward with the gRPC
		// status its HTTP status maps to.
		resp.Code = grpcCode(a.Response.Status)
		return resp, nil
	}
	b := a.Upstream
	if b == nil || b.Status != 0 || len(b.Endpoints) == 0 {
		resp.Code = codes.Unavailable
		return resp, nil
	}
	if method == "EchoThree" {
		// The echo server does not implement it.
		resp.Code = codes.Unimplemented
		return resp, nil
	}
	pod, err := c.fleet.podAt(ctx, b.Pick(rand.Uint64()))
	if err != nil {
		return &confgrpc.Response{}, err
	}
	assertions := &pb.Assertions{
		FullyQualifiedMethod: b.Request.Path,
		Authority:            b.Request.Authority,
		Context:              &pb.Context{Namespace: pod.Namespace, Pod: pod.Name},
	}
	for _, h := range b.Request.Headers {
		if !strings.HasPrefix(h.Name, ":") {
			assertions.Headers = append(assertions.Headers, &pb.Header{Key: strings.ToLower(h.Name), Value: h.Value})
		}
	}
	resp.Code, resp.Response = codes.OK, &pb.EchoResponse{Assertions: assertions, Request: req}
	return resp, nil
}

func (c *grpcClient) Close() {}

// grpcCode is Envoy's mapping of an HTTP status to a gRPC status
// (Grpc::Utility::httpToGrpcStatus).
func grpcCode(status int) codes.Code {
	switch status {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}
