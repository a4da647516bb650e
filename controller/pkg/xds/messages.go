package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// routeMessages hands out the messages most routes are built of. A route's
// messages are garbage once its bytes are written, so a virtual host's
// encoding builds every route it encodes in the same routeMessages,
// cleared after each, rather than a virtual host's route messages being
// alive at once (a large part of all a full translation would allocate).
// What is kept beyond
// one route (the action shared by the routes of a cluster, the messages
// tests read) comes from a routeMessages that is never cleared.
type routeMessages struct {
	routes     slab[routev3.Route]
	matches    slab[matchMessages]
	headers    slab[headerMatcherMessages]
	headerList slab[*routev3.HeaderMatcher]
	options    slab[headerOptionMessages]
	optionList slab[*corev3.HeaderValueOption]
}

// matchMessages are a route match and its most common path specifier.
type matchMessages struct {
	match  routev3.RouteMatch
	prefix routev3.RouteMatch_PathSeparatedPrefix
}

// headerMatcherMessages are the messages of a header match by exact value.
type headerMatcherMessages struct {
	header routev3.HeaderMatcher
	spec   routev3.HeaderMatcher_StringMatch
	str    matcherv3.StringMatcher
	exact  matcherv3.StringMatcher_Exact
}

// headerOptionMessages are the messages of a header to add or set.
type headerOptionMessages struct {
	option corev3.HeaderValueOption
	value  corev3.HeaderValue
}

// clear zeroes every message handed out since the last clear, so that
// none keeps what it pointed to, and makes them available again.
func (m *routeMessages) clear() {
	m.routes.clear()
	m.matches.clear()
	m.headers.clear()
	m.headerList.clear()
	m.options.clear()
	m.optionList.clear()
}

// slab hands out elements of arrays it allocates, in place of one
// allocation per message. A cleared slab hands out its last array again;
// an array it outgrew stays alive for as long as what was handed out of
// it does.
type slab[T any] struct {
	items []T
}

// take returns n zero elements.
func (s *slab[T]) take(n int) []T {
	if len(s.items)+n > cap(s.items) {
		s.items = make([]T, 0, max(2*cap(s.items), n, 4))
	}
	s.items = s.items[:len(s.items)+n]
	return s.items[len(s.items)-n:]
}

func (s *slab[T]) clear() {
	clear(s.items)
	s.items = s.items[:0]
}
