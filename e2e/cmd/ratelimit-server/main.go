// Command ratelimit-server serves ratelimitserver.Server over gRPC in
// cleartext HTTP/2 on $PORT (8081 by default), limiting each descriptor to
// $LIMIT requests a minute (2 by default): the rate limit service the
// fleet's e2e tests run as a Pod.
package main

import (
	"cmp"
	"log"
	"net"
	"os"
	"strconv"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"

	"isobar.dev/e2e/ratelimitserver"
)

func main() {
	limit, err := strconv.ParseUint(cmp.Or(os.Getenv("LIMIT"), "2"), 10, 32)
	if err != nil {
		log.Fatalf("LIMIT: %v", err)
	}
	l, err := net.Listen("tcp", ":"+cmp.Or(os.Getenv("PORT"), "8081"))
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(s, &ratelimitserver.Server{Limit: uint32(limit)})
	log.Printf("serving envoy.service.ratelimit.v3.RateLimitService on %s, %d requests a minute per descriptor", l.Addr(), limit)
	log.Fatal(s.Serve(l))
}
