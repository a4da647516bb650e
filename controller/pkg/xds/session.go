package xds

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	cookiesessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	headersessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"isobar.dev/controller/pkg/ir"
)

// statefulSessionFilter is Envoy's stateful session filter. Every
// connection manager has it, without a session of its own: it keeps
// sessions only on the routes that configure one.
const statefulSessionFilter = "envoy.filters.http.stateful_session"

// statefulSession is a route's session as the filter's per-route
// configuration. A cookie's path is the part of the route's path every
// request it matches starts with, so that the browser sends the cookie to
// this route and not to another route's session (GEP-1619); Envoy marks
// it HttpOnly.
func statefulSession(s *ir.Session, m *ir.Match) *statefulsessionv3.StatefulSessionPerRoute {
	state := &corev3.TypedExtensionConfig{}
	if s.Header != "" {
		state.Name = "envoy.http.stateful_session.header"
		state.TypedConfig = typed(&headersessionv3.HeaderBasedSessionState{Name: s.Header})
	} else {
		c := &httpv3.Cookie{Name: s.Cookie, Path: cookiePath(m)}
		if s.TTL > 0 {
			c.Ttl = durationpb.New(s.TTL)
		}
		state.Name = "envoy.http.stateful_session.cookie"
		state.TypedConfig = typed(&cookiesessionv3.CookieBasedSessionState{Cookie: c})
	}
	return &statefulsessionv3.StatefulSessionPerRoute{Override: &statefulsessionv3.StatefulSessionPerRoute_StatefulSession{
		StatefulSession: &statefulsessionv3.StatefulSession{SessionState: state},
	}}
}

// cookiePath is the path a route's session cookie is for: an exact path,
// a prefix, or a regular expression's literal start up to its last "/".
func cookiePath(m *ir.Match) string {
	p := m.Path
	switch m.PathType {
	case ir.PathExact:
	case ir.PathRegex:
		p = strings.TrimPrefix(p, "^")
		if i := strings.IndexAny(p, `\.^$*+?()[]{}|`); i >= 0 {
			p = p[:i]
			p = p[:strings.LastIndexByte(p, '/')+1]
		}
		p = strings.TrimRight(p, "/")
	case ir.PathStringPrefix:
		p = p[:strings.LastIndexByte(p, '/')+1]
		p = strings.TrimRight(p, "/")
	default:
		p = strings.TrimRight(p, "/")
	}
	if !strings.HasPrefix(p, "/") {
		return "/"
	}
	return p
}
