package envoysim

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

const globalRateLimitFilterName = "envoy.filters.http.ratelimit"

// rateLimitService is a connection manager's rate limit filter, as the
// simulator models it: a gRPC service asked about every request whose
// route or virtual host has descriptors.
type rateLimitService struct {
	cluster, authority, domain                  string
	timeout                                     time.Duration
	failureModeDeny, headers, resourceExhausted bool
}

// globalRateLimitFilter reads the rate limit filter's configuration.
func globalRateLimitFilter(hf *hcmv3.HttpFilter) (*rateLimitService, error) {
	cfg, err := unpack[ratelimitv3.RateLimit](hf.GetTypedConfig(), "rate limit filter")
	if err != nil {
		return nil, err
	}
	if err := understand(cfg, "domain", "timeout", "failure_mode_deny", "rate_limit_service", "enable_x_ratelimit_headers", "rate_limited_as_resource_exhausted"); err != nil {
		return nil, err
	}
	rls := cfg.GetRateLimitService()
	if err := understand(rls, "grpc_service", "transport_api_version"); err != nil {
		return nil, err
	}
	g := rls.GetGrpcService()
	if err := understand(g, "envoy_grpc"); err != nil {
		return nil, err
	}
	if err := understand(g.GetEnvoyGrpc(), "cluster_name", "authority"); err != nil {
		return nil, err
	}
	out := &rateLimitService{
		cluster: g.GetEnvoyGrpc().GetClusterName(), domain: cfg.GetDomain(),
		// Envoy waits 20ms for an answer unless told otherwise.
		timeout:         20 * time.Millisecond,
		failureModeDeny: cfg.GetFailureModeDeny(), resourceExhausted: cfg.GetRateLimitedAsResourceExhausted(),
		headers: cfg.GetEnableXRatelimitHeaders() == ratelimitv3.RateLimit_DRAFT_VERSION_03,
	}
	out.authority = cmp.Or(g.GetEnvoyGrpc().GetAuthority(), out.cluster)
	if cfg.GetTimeout() != nil {
		out.timeout = cfg.GetTimeout().AsDuration()
	}
	return out, nil
}

// RateLimitCheck is what Envoy's rate limit filter asks the Gateway's rate
// limit service about a request (envoy.service.ratelimit.v3), and how it
// acts on the answer.
type RateLimitCheck struct {
	// Server is the service's cluster, with its endpoints.
	Server    Backend `json:"server"`
	Authority string  `json:"authority"`
	Domain    string  `json:"domain"`
	// Descriptors are the request's, each a list of key and value.
	Descriptors [][][2]string `json:"descriptors"`
	Timeout     time.Duration `json:"timeout"`
	// FailOpen lets the request through when the service cannot be
	// asked; else Envoy answers 500.
	FailOpen bool `json:"failOpen,omitempty"`
	// Headers are the x-ratelimit-* headers (draft 03) of the answer.
	Headers bool `json:"headers,omitempty"`
	// GRPCStatus is the gRPC status of a limited gRPC request:
	// RESOURCE_EXHAUSTED (8), or UNAVAILABLE (14).
	GRPCStatus int `json:"grpcStatus"`
}

// rateLimitOf is the check of a request the route forwards, when the
// connection manager has the filter and the route or its virtual host
// describes the request; nil otherwise. Envoy takes the route's
// descriptors, and its virtual host's unless the route has its own (or
// its per-filter configuration says to include or ignore them).
func (s *Simulator) rateLimitOf(svc *rateLimitService, vh *routev3.VirtualHost, rt *routev3.Route, action *routev3.RouteAction, r *httpRequest) (*RateLimitCheck, error) {
	if svc == nil || action == nil {
		return nil, nil
	}
	vhOption := ratelimitv3.RateLimitPerRoute_OVERRIDE
	if cfg := rt.GetTypedPerFilterConfig()[globalRateLimitFilterName]; cfg != nil {
		per, err := unpack[ratelimitv3.RateLimitPerRoute](cfg, "rate limit per route")
		if err != nil {
			return nil, err
		}
		if err := understand(per, "vh_rate_limits"); err != nil {
			return nil, err
		}
		vhOption = per.GetVhRateLimits()
	}
	limits := action.GetRateLimits()
	switch {
	case vhOption == ratelimitv3.RateLimitPerRoute_INCLUDE, vhOption == ratelimitv3.RateLimitPerRoute_OVERRIDE && len(limits) == 0:
		limits = append(limits[:len(limits):len(limits)], vh.GetRateLimits()...)
	}
	var descriptors [][][2]string
	for _, rl := range limits {
		if err := understand(rl, "actions"); err != nil {
			return nil, err
		}
		d, ok, err := descriptorOf(rl, r)
		if err != nil {
			return nil, err
		}
		if ok {
			descriptors = append(descriptors, d)
		}
	}
	if len(descriptors) == 0 {
		return nil, nil
	}
	out := &RateLimitCheck{Server: Backend{Cluster: svc.cluster}, Authority: svc.authority, Domain: svc.domain, Descriptors: descriptors,
		Timeout: svc.timeout, FailOpen: !svc.failureModeDeny, Headers: svc.headers, GRPCStatus: 14}
	if svc.resourceExhausted {
		out.GRPCStatus = 8
	}
	if err := s.upstream(&out.Server, 503); err != nil {
		return nil, err
	}
	if !out.Server.HTTP2 {
		return nil, fmt.Errorf("rate limit service %s does not speak HTTP/2: Envoy's gRPC client cannot use it", svc.cluster)
	}
	return out, nil
}

// descriptorOf is the descriptor a rate limit's actions make of a
// request; none when an action finds nothing (a header the request does
// not have, headers that do not match as expected).
func descriptorOf(rl *routev3.RateLimit, r *httpRequest) ([][2]string, bool, error) {
	var out [][2]string
	for _, a := range rl.GetActions() {
		switch act := a.GetActionSpecifier().(type) {
		case *routev3.RateLimit_Action_GenericKey_:
			g := act.GenericKey
			if err := understand(g, "descriptor_key", "descriptor_value"); err != nil {
				return nil, false, err
			}
			out = append(out, [2]string{cmp.Or(g.GetDescriptorKey(), "generic_key"), g.GetDescriptorValue()})
		case *routev3.RateLimit_Action_RequestHeaders_:
			h := act.RequestHeaders
			if err := understand(h, "header_name", "descriptor_key"); err != nil {
				return nil, false, err
			}
			v, ok := r.headerValues(strings.ToLower(h.GetHeaderName()))
			if !ok {
				return nil, false, nil
			}
			out = append(out, [2]string{h.GetDescriptorKey(), v})
		case *routev3.RateLimit_Action_RemoteAddress_:
			if r.client.err != nil {
				return nil, false, r.client.err
			}
			out = append(out, [2]string{"remote_address", r.client.remote.String()})
		case *routev3.RateLimit_Action_HeaderValueMatch_:
			m := act.HeaderValueMatch
			if err := understand(m, "descriptor_key", "descriptor_value", "expect_match", "headers"); err != nil {
				return nil, false, err
			}
			all := true
			for _, h := range m.GetHeaders() {
				ok, err := headerMatches(h, r)
				if err != nil {
					return nil, false, err
				}
				all = all && ok
			}
			expect := m.GetExpectMatch() == nil || m.GetExpectMatch().GetValue()
			if all != expect {
				return nil, false, nil
			}
			out = append(out, [2]string{cmp.Or(m.GetDescriptorKey(), "header_match"), m.GetDescriptorValue()})
		default:
			return nil, false, errUnsupportedf("rate limit action %T", act)
		}
	}
	return out, len(out) > 0, nil
}

// Request is the RateLimitRequest Envoy sends for the request.
func (c *RateLimitCheck) Request() *rlsv3.RateLimitRequest {
	out := &rlsv3.RateLimitRequest{Domain: c.Domain, HitsAddend: 1}
	for _, d := range c.Descriptors {
		desc := &ratelimitcommonv3.RateLimitDescriptor{}
		for _, e := range d {
			desc.Entries = append(desc.Entries, &ratelimitcommonv3.RateLimitDescriptor_Entry{Key: e[0], Value: e[1]})
		}
		out.Descriptors = append(out.Descriptors, desc)
	}
	return out
}

// RateLimitVerdict is what the filter makes of the service's answer:
// Limited, Envoy's answer instead of the route's; else the headers the
// response gets.
type RateLimitVerdict struct {
	Limited  *Response
	Response []Header
}

// Unreachable is the verdict when the service cannot be asked: through
// when the filter fails open, else 500.
func (c *RateLimitCheck) Unreachable() RateLimitVerdict {
	if c.FailOpen {
		return RateLimitVerdict{}
	}
	return RateLimitVerdict{Limited: &Response{Status: 500}}
}

// Verdict is the verdict on the service's answer: OVER_LIMIT is 429 with
// x-envoy-ratelimited; with the headers on, both answers carry the
// x-ratelimit-* headers of the descriptor with the least remaining.
func (c *RateLimitCheck) Verdict(resp *rlsv3.RateLimitResponse) RateLimitVerdict {
	var headers []Header
	if c.Headers {
		headers = xRateLimitHeaders(resp.GetStatuses())
	}
	switch resp.GetOverallCode() {
	case rlsv3.RateLimitResponse_OK:
		return RateLimitVerdict{Response: headers}
	case rlsv3.RateLimitResponse_OVER_LIMIT:
		h := append([]Header{{Name: "x-envoy-ratelimited", Value: "true"}}, headers...)
		return RateLimitVerdict{Limited: &Response{Status: 429, Headers: h, GRPCStatus: c.GRPCStatus}}
	}
	return c.Unreachable()
}

// xRateLimitHeaders are the draft-03 headers Envoy writes from the
// statuses: the limit, remaining and reset of the one with the least
// remaining, and each limit's quota policy.
func xRateLimitHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus) []Header {
	var least *rlsv3.RateLimitResponse_DescriptorStatus
	var policies []string
	for _, s := range statuses {
		l := s.GetCurrentLimit()
		if l == nil {
			continue
		}
		if least == nil || s.GetLimitRemaining() < least.GetLimitRemaining() {
			least = s
		}
		p := fmt.Sprintf("%d;w=%d", l.GetRequestsPerUnit(), unitSeconds(l.GetUnit()))
		if l.GetName() != "" {
			p += fmt.Sprintf(";name=%q", l.GetName())
		}
		policies = append(policies, p)
	}
	if least == nil {
		return nil
	}
	out := []Header{
		{Name: "x-ratelimit-limit", Value: strings.Join(append([]string{strconv.Itoa(int(least.GetCurrentLimit().GetRequestsPerUnit()))}, policies...), ", ")},
		{Name: "x-ratelimit-remaining", Value: strconv.Itoa(int(least.GetLimitRemaining()))},
	}
	if r := least.GetDurationUntilReset(); r != nil {
		out = append(out, Header{Name: "x-ratelimit-reset", Value: strconv.Itoa(int(r.AsDuration().Seconds()))})
	}
	return out
}

func unitSeconds(u rlsv3.RateLimitResponse_RateLimit_Unit) int {
	switch u {
	case rlsv3.RateLimitResponse_RateLimit_SECOND:
		return 1
	case rlsv3.RateLimitResponse_RateLimit_MINUTE:
		return 60
	case rlsv3.RateLimitResponse_RateLimit_HOUR:
		return 3600
	case rlsv3.RateLimitResponse_RateLimit_DAY:
		return 86400
	case rlsv3.RateLimitResponse_RateLimit_WEEK:
		return 7 * 86400
	case rlsv3.RateLimitResponse_RateLimit_MONTH:
		return 30 * 86400
	case rlsv3.RateLimitResponse_RateLimit_YEAR:
		return 365 * 86400
	}
	return 0
}
