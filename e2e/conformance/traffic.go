package conformance

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// sendsTraffic matches what a conformance test's source calls to send
// requests or open connections to a Gateway: the suite's round tripper,
// gRPC client and WebSocket dialer, and its TLS, TCP, UDP, weighted and
// HTTP request helpers, and the UDP tests' DNS and echo probes.
var sendsTraffic = regexp.MustCompile(`suite\.(RoundTripper|GRPCClient|WebSocketDialer)\b|\b(tls|tcp|udp|weight)\.[A-Z]|\bhttp\.(MakeRequest|AwaitConvergence|CompareRoundTrip|ExpectMirroredRequest)|\bnet\.Dial|\bdns\.Exchange|\budpEchoSendOnce\(`)

// trafficTests returns the ShortNames of the tests that send traffic, read
// from the source file of each test's function: those that check status
// alone are the rest.
func trafficTests(tests []suite.ConformanceTest) ([]string, error) {
	var out []string
	sources := map[string][]byte{}
	for _, ct := range tests {
		pc := reflect.ValueOf(ct.Test).Pointer()
		fn := runtime.FuncForPC(pc)
		if fn == nil {
			return nil, fmt.Errorf("test %s: no function information", ct.ShortName)
		}
		file, _ := fn.FileLine(pc)
		src, ok := sources[file]
		if !ok {
			var err error
			if src, err = os.ReadFile(file); err != nil {
				return nil, fmt.Errorf("test %s: reading its source to see whether it sends traffic: %w", ct.ShortName, err)
			}
			sources[file] = src
		}
		if sendsTraffic.Match(src) {
			out = append(out, ct.ShortName)
		}
	}
	return out, nil
}
