// Command authz-server serves authzserver.Server over gRPC in cleartext
// HTTP/2 on $PORT (9000 by default): the authorization server the fleet's
// e2e tests run as a Pod.
package main

import (
	"cmp"
	"log"
	"net"
	"os"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"

	"isobar.dev/e2e/authzserver"
)

func main() {
	l, err := net.Listen("tcp", ":"+cmp.Or(os.Getenv("PORT"), "9000"))
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	authv3.RegisterAuthorizationServer(s, authzserver.Server{})
	log.Printf("serving envoy.service.auth.v3.Authorization on %s", l.Addr())
	log.Fatal(s.Serve(l))
}
