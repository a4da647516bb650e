package xdsserver

import (
	"context"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"isobar.dev/api/envoyrelease"
	"isobar.dev/controller/pkg/envoyversion"
)

// callbacks track, per stream, what was sent and what came back: a request
// that carries the last response's version (state of the world) or nonce
// (delta) acknowledges it, unless it carries an error, which rejects it.
func (s *Server) callbacks() server.Callbacks {
	open := func(delta bool) func(context.Context, int64, string) error {
		return func(ctx context.Context, id int64, _ string) error {
			if err := s.takeSlot(ctx); err != nil {
				return err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.streams[id] = &stream{delta: delta, sent: map[string]string{}, nonce: map[string]string{}, acked: map[string]string{},
				nack: map[string]string{}, subs: map[string]*subscription{}, slot: s.slots != nil}
			s.notify()
			return nil
		}
	}
	closed := func(id int64, _ *corev3.Node) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if str, ok := s.streams[id]; ok && str.slot {
			<-s.slots
		}
		delete(s.streams, id)
		s.notify()
	}
	return server.CallbackFuncs{
		StreamOpenFunc:        open(false),
		DeltaStreamOpenFunc:   open(true),
		StreamClosedFunc:      closed,
		DeltaStreamClosedFunc: closed,
		StreamRequestFunc: func(id int64, r *discoveryv3.DiscoveryRequest) error {
			if err := supported(r.GetNode()); err != nil {
				return err
			}
			s.subscribe(id, r.GetTypeUrl(), func(sub *subscription, first bool) {
				// Every request carries the whole subscription; an empty
				// first one is the legacy wildcard.
				sub.wildcard = slices.Contains(r.GetResourceNames(), "*") || len(r.GetResourceNames()) == 0 && (first || sub.wildcard)
				sub.names = map[string]bool{}
				for _, n := range r.GetResourceNames() {
					sub.names[n] = true
				}
			})
			s.request(id, r.GetNode(), r.GetTypeUrl(), r.GetVersionInfo(), "", r.GetErrorDetail().GetMessage(), r.GetErrorDetail() != nil)
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			s.sent(id, resp.GetTypeUrl(), resp.GetVersionInfo(), "")
		},
		StreamDeltaRequestFunc: func(id int64, r *discoveryv3.DeltaDiscoveryRequest) error {
			if err := supported(r.GetNode()); err != nil {
				return err
			}
			s.subscribe(id, r.GetTypeUrl(), func(sub *subscription, first bool) {
				// Delta requests change the subscription; "*" is the
				// wildcard, as is an empty first request.
				if first && len(r.GetResourceNamesSubscribe()) == 0 {
					sub.wildcard = true
				}
				for _, n := range r.GetResourceNamesSubscribe() {
					sub.wildcard = sub.wildcard || n == "*"
					sub.names[n] = true
				}
				for _, n := range r.GetResourceNamesUnsubscribe() {
					sub.wildcard = sub.wildcard && n != "*"
					delete(sub.names, n)
				}
			})
			s.request(id, r.GetNode(), r.GetTypeUrl(), "", r.GetResponseNonce(), r.GetErrorDetail().GetMessage(), r.GetErrorDetail() != nil)
			return nil
		},
		StreamDeltaResponseFunc: func(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
			s.sent(id, resp.GetTypeUrl(), resp.GetSystemVersionInfo(), resp.GetNonce())
		},
	}
}

// supported refuses an Envoy older than the oldest release Isobar
// supports, which may not know what it would be sent. An xDS client that
// reports no release is served as the newest.
func supported(node *corev3.Node) error {
	if v, ok := envoyversion.Of(node); ok && !envoyversion.Supported(v) {
		return status.Errorf(codes.FailedPrecondition, "Envoy %s is older than %s, the oldest release Isobar supports", v, envoyrelease.Oldest)
	}
	return nil
}

// subscribe lets change update a stream's subscription to a type; first
// says it is the stream's first request of the type.
func (s *Server) subscribe(id int64, typ string, change func(sub *subscription, first bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	str, ok := s.streams[id]
	if !ok {
		return
	}
	sub, subscribed := str.subs[typ]
	if !subscribed {
		sub = &subscription{names: map[string]bool{}}
		str.subs[typ] = sub
	}
	change(sub, !subscribed)
	s.notify()
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
	if str.slot && str.firstPushDone() {
		str.slot = false
		<-s.slots
	}
}

// takeSlot waits for a first-push slot, when they are bounded, or for the
// stream to end.
func (s *Server) takeSlot(ctx context.Context) error {
	if s.slots == nil {
		return nil
	}
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	s.mu.Lock()
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
