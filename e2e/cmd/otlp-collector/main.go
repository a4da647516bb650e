// Command otlp-collector receives spans over OTLP/gRPC in cleartext
// HTTP/2 on $PORT (4317 by default) and prints each as a line of JSON: the
// OpenTelemetry collector the fleet's e2e tests run as a Pod.
package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"

	collectortracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"isobar.dev/e2e/otlpreceiver"
)

func main() {
	l, err := net.Listen("tcp", ":"+cmp.Or(os.Getenv("PORT"), "4317"))
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	collectortracev1.RegisterTraceServiceServer(s, &otlpreceiver.Receiver{OnSpan: func(sp otlpreceiver.Span) {
		line, err := json.Marshal(sp)
		if err == nil {
			fmt.Println(string(line))
		}
	}})
	log.Printf("receiving spans on %s", l.Addr())
	log.Fatal(s.Serve(l))
}
