package envoysim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

const openTelemetryTracer = "envoy.tracers.opentelemetry"

// Trace is what Envoy's OpenTelemetry tracer does with a request of a
// connection manager that traces: when Sampled says so, the data plane
// makes a span of it ("ingress", of kind server) with Attributes and
// Envoy's own attributes of the answer, and exports it to Collector over
// OTLP/gRPC.
type Trace struct {
	Collector   Backend       `json:"collector"`
	Authority   string        `json:"authority"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	ServiceName string        `json:"serviceName"`
	// Sampling is the percentage of requests traced (overall_sampling),
	// of those ClientSampling (with an x-client-trace-id) or
	// RandomSampling (the others) choose first.
	Sampling       float64 `json:"sampling"`
	ClientSampling float64 `json:"clientSampling"`
	RandomSampling float64 `json:"randomSampling"`
	// URL is the request's URL as the http.url attribute keeps it, cut
	// at the connection manager's max_path_tag_length.
	URL string `json:"url"`
	// Attributes are the custom tags' values for the request: literals
	// and request headers; Environment names those whose values are the
	// Envoy process's environment variables, by tag.
	Attributes  map[string]string `json:"attributes,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
}

// defaultMaxPathTagLength is Envoy's max_path_tag_length when unset.
const defaultMaxPathTagLength = 256

// traceOf is the tracing of a connection manager for request r; nil when
// it does not trace.
func (s *Simulator) traceOf(hcm *hcmv3.HttpConnectionManager, r *httpRequest) (*Trace, error) {
	t := hcm.GetTracing()
	if t == nil {
		return nil, nil
	}
	if err := understand(t, "overall_sampling", "client_sampling", "random_sampling", "max_path_tag_length", "custom_tags", "provider"); err != nil {
		return nil, err
	}
	p := t.GetProvider()
	if p.GetName() != openTelemetryTracer {
		return nil, errUnsupportedf("tracer %s", p.GetName())
	}
	cfg, err := unpack[tracev3.OpenTelemetryConfig](p.GetTypedConfig(), "OpenTelemetry tracer")
	if err != nil {
		return nil, err
	}
	if err := understand(cfg, "grpc_service", "service_name"); err != nil {
		return nil, err
	}
	g := cfg.GetGrpcService()
	if err := understand(g, "envoy_grpc", "timeout"); err != nil {
		return nil, err
	}
	if err := understand(g.GetEnvoyGrpc(), "cluster_name", "authority"); err != nil {
		return nil, err
	}
	out := &Trace{
		Collector: Backend{Cluster: g.GetEnvoyGrpc().GetClusterName()}, Authority: g.GetEnvoyGrpc().GetAuthority(),
		Timeout: g.GetTimeout().AsDuration(), ServiceName: cfg.GetServiceName(), Sampling: 100, ClientSampling: 100, RandomSampling: 100,
	}
	if out.Authority == "" {
		out.Authority = out.Collector.Cluster
	}
	if v := t.GetOverallSampling(); v != nil {
		out.Sampling = v.GetValue()
	}
	if v := t.GetClientSampling(); v != nil {
		out.ClientSampling = v.GetValue()
	}
	if v := t.GetRandomSampling(); v != nil {
		out.RandomSampling = v.GetValue()
	}
	max := uint32(defaultMaxPathTagLength)
	if v := t.GetMaxPathTagLength(); v != nil {
		max = v.GetValue()
	}
	out.URL = r.scheme + "://" + r.authority + r.path
	if uint32(len(out.URL)) > max {
		out.URL = out.URL[:max]
	}
	for _, ct := range t.GetCustomTags() {
		if err := understand(ct, "tag", "literal", "request_header", "environment"); err != nil {
			return nil, err
		}
		switch {
		case ct.GetLiteral() != nil:
			setAttribute(&out.Attributes, ct.GetTag(), ct.GetLiteral().GetValue())
		case ct.GetRequestHeader() != nil:
			if err := understand(ct.GetRequestHeader(), "name"); err != nil {
				return nil, err
			}
			if v, ok := lookupHeader(r.headers, strings.ToLower(ct.GetRequestHeader().GetName())); ok {
				setAttribute(&out.Attributes, ct.GetTag(), v)
			}
		case ct.GetEnvironment() != nil:
			if err := understand(ct.GetEnvironment(), "name"); err != nil {
				return nil, err
			}
			setAttribute(&out.Environment, ct.GetTag(), ct.GetEnvironment().GetName())
		default:
			return nil, fmt.Errorf("custom tag %s has no value: Envoy rejects the listener", ct.GetTag())
		}
	}
	if err := s.upstream(&out.Collector, 503); err != nil {
		return nil, err
	}
	if !out.Collector.HTTP2 {
		return nil, fmt.Errorf("the OpenTelemetry collector's cluster %s does not speak HTTP/2: Envoy's gRPC client cannot use it", out.Collector.Cluster)
	}
	return out, nil
}

func setAttribute(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

// lookupHeader is the first value of a request header (names in lower
// case), as a custom tag takes it, and whether the request has it.
func lookupHeader(headers []Header, name string) (string, bool) {
	for _, h := range headers {
		if h.Name == name {
			return h.Value, true
		}
	}
	return "", false
}

// Sampled is Envoy's decision for the request of an x-request-id, with or
// without an x-client-trace-id, as ConnectionManagerUtility makes it: a
// request with a client trace id is chosen by ClientSampling (at random),
// the others by RandomSampling of their id; either is then kept by
// Sampling of their id. A share of the ids is stable: the same id gets
// the same decision.
func (t *Trace) Sampled(requestID string, clientTraceID bool) bool {
	h := fnv.New64a()
	_, _ = h.Write([]byte(requestID))
	n := float64(h.Sum64() % 10000)
	chosen := n < t.RandomSampling*100
	if clientTraceID {
		chosen = rand.Float64()*100 < t.ClientSampling
	}
	return chosen && n < t.Sampling*100
}
