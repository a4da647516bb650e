package xdsserver

import (
	"context"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
)

// callbacks track, per stream, what was sent and what came back: a request
// that carries the last response's version (state of the world) or nonce
// (delta) acknowledges it, unless it carries an error, which rejects it.
func (s *Server) callbacks() server.Callbacks {
	open := func(delta bool) func(context.Context, int64, string) error {
		return func(_ context.Context, id int64, _ string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.streams[id] = &stream{delta: delta, sent: map[string]string{}, nonce: map[string]string{}, acked: map[string]string{}, nack: map[string]string{}}
			s.notify()
			return nil
		}
	}
	closed := func(id int64, _ *corev3.Node) {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.streams, id)
		s.notify()
	}
	return server.CallbackFuncs{
		StreamOpenFunc:        open(false),
		DeltaStreamOpenFunc:   open(true),
		StreamClosedFunc:      closed,
		DeltaStreamClosedFunc: closed,
		StreamRequestFunc: func(id int64, r *discoveryv3.DiscoveryRequest) error {
			s.request(id, r.GetNode(), r.GetTypeUrl(), r.GetVersionInfo(), "", r.GetErrorDetail().GetMessage(), r.GetErrorDetail() != nil)
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			s.sent(id, resp.GetTypeUrl(), resp.GetVersionInfo(), "")
		},
		StreamDeltaRequestFunc: func(id int64, r *discoveryv3.DeltaDiscoveryRequest) error {
			s.request(id, r.GetNode(), r.GetTypeUrl(), "", r.GetResponseNonce(), r.GetErrorDetail().GetMessage(), r.GetErrorDetail() != nil)
			return nil
		},
		StreamDeltaResponseFunc: func(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
			s.sent(id, resp.GetTypeUrl(), resp.GetSystemVersionInfo(), resp.GetNonce())
		},
	}
}

func (s *Server) sent(id int64, typ, version, nonce string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if str, ok := s.streams[id]; ok {
		str.sent[typ] = version
		str.nonce[typ] = nonce
	}
}

func (s *Server) request(id int64, node *corev3.Node, typ, version, nonce, errMsg string, rejected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	str, ok := s.streams[id]
	if !ok {
		return
	}
	if node.GetId() != "" {
		str.node = node.GetId()
	}
	sentVersion, wasSent := str.sent[typ]
	if !wasSent {
		return // the first request of a type: a subscription, not an answer
	}
	answers := version == sentVersion
	if str.delta {
		answers = nonce != "" && nonce == str.nonce[typ]
	}
	switch {
	case rejected:
		s.nacks++
		str.nack[typ] = errMsg
		s.notify()
	case answers:
		s.acks++
		str.acked[typ] = sentVersion
		delete(str.nack, typ)
		s.notify()
	}
}
