package envoysim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	cookiesessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	headersessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
)

const statefulSessionFilterName = "envoy.filters.http.stateful_session"

// Session is a route's stateful session: where Envoy reads the endpoint a
// session is on, and the endpoint this request names (Host), if any.
type Session struct {
	// Exactly one of Cookie and Header is set.
	Cookie *SessionCookie `json:"cookie,omitempty"`
	Header string         `json:"header,omitempty"`
	// Host is the endpoint (address:port) the request's cookie or header
	// names: Pick goes there while the cluster has it and it is healthy.
	Host string `json:"host,omitempty"`
}

// SessionCookie is the cookie Envoy keeps a session in.
type SessionCookie struct {
	Name string        `json:"name"`
	Path string        `json:"path,omitempty"`
	TTL  time.Duration `json:"ttl,omitempty"`
}

// statefulSessionFilter checks the filter's own configuration: the
// simulator models one without a session of its own, which routes give
// one.
func statefulSessionFilter(hf *hcmv3.HttpFilter) error {
	cfg, err := unpack[statefulsessionv3.StatefulSession](hf.GetTypedConfig(), "stateful session filter")
	if err != nil {
		return err
	}
	return understand(cfg)
}

// sessionOf is the session a route (or its virtual host) configures, with
// the endpoint the request names; nil for none.
func sessionOf(vh *routev3.VirtualHost, rt *routev3.Route, r *httpRequest) (*Session, error) {
	cfg := perFilterConfig(vh, rt, statefulSessionFilterName)
	if cfg == nil {
		return nil, nil
	}
	pr, err := unpack[statefulsessionv3.StatefulSessionPerRoute](cfg, "stateful session")
	if err != nil {
		return nil, err
	}
	if err := understand(pr, "disabled", "stateful_session"); err != nil {
		return nil, err
	}
	if pr.GetDisabled() {
		return nil, nil
	}
	ss := pr.GetStatefulSession()
	if err := understand(ss, "session_state"); err != nil {
		return nil, err
	}
	state := ss.GetSessionState()
	if err := understand(state, "name", "typed_config"); err != nil {
		return nil, err
	}
	out := &Session{}
	var value string
	var ok bool
	switch state.GetName() {
	case "envoy.http.stateful_session.cookie":
		c, err := unpack[cookiesessionv3.CookieBasedSessionState](state.GetTypedConfig(), "cookie session state")
		if err != nil {
			return nil, err
		}
		if err := understand(c, "cookie"); err != nil {
			return nil, err
		}
		if err := understand(c.GetCookie(), "name", "ttl", "path"); err != nil {
			return nil, err
		}
		out.Cookie = &SessionCookie{Name: c.GetCookie().GetName(), Path: c.GetCookie().GetPath(), TTL: c.GetCookie().GetTtl().AsDuration()}
		value, ok = r.cookie(out.Cookie.Name)
	case "envoy.http.stateful_session.header":
		h, err := unpack[headersessionv3.HeaderBasedSessionState](state.GetTypedConfig(), "header session state")
		if err != nil {
			return nil, err
		}
		if err := understand(h, "name"); err != nil {
			return nil, err
		}
		out.Header = strings.ToLower(h.GetName())
		value, ok = r.headerValues(out.Header)
	default:
		return nil, errUnsupportedf("session state %s", state.GetName())
	}
	if ok {
		out.Host = sessionHost(value, time.Now())
	}
	return out, nil
}

// sessionHost is the endpoint a session's value names: base64 of
// "address:port", or of a JSON object with the address and when the
// session expires (Unix seconds), which newer Envoys write for a cookie
// with a TTL. "" when it names none, or has expired.
func sessionHost(value string, now time.Time) string {
	b, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return ""
	}
	if !strings.HasPrefix(string(b), "{") {
		return string(b)
	}
	var v struct {
		Address string `json:"address"`
		Expires int64  `json:"expires"`
	}
	if json.Unmarshal(b, &v) != nil || (v.Expires != 0 && v.Expires < now.Unix()) {
		return ""
	}
	return v.Address
}

// update is the header that keeps a session on endpoint, which Envoy adds
// to the response when the request's session did not name it; nil when it
// did (or nothing was picked).
func (s *Session) update(endpoint string) *Header {
	if s == nil || endpoint == "" || endpoint == s.Host {
		return nil
	}
	v := base64.StdEncoding.EncodeToString([]byte(endpoint))
	if s.Header != "" {
		return &Header{Name: s.Header, Value: v}
	}
	c := s.Cookie
	return &Header{Name: "set-cookie", Value: setCookieValue(c.Name, v, c.Path, int64(c.TTL/time.Second))}
}

// ClientHeaders are the response headers the client gets when the backend
// answers from endpoint: ResponseHeaders, and the session's update.
func (b *Backend) ClientHeaders(endpoint string) []Header {
	if h := b.Session.update(endpoint); h != nil {
		return append(b.ResponseHeaders[:len(b.ResponseHeaders):len(b.ResponseHeaders)], *h)
	}
	return b.ResponseHeaders
}

// sessionEndpoint is the endpoint among eps a session keeps the request
// on; "" when there is none.
func (b *Backend) sessionEndpoint(eps []string) string {
	if b.Session == nil || b.Session.Host == "" {
		return ""
	}
	for _, e := range eps {
		if e == b.Session.Host {
			return e
		}
	}
	return ""
}

// errSessionWithoutFilter: Envoy ignores a route's session when its
// connection manager has no stateful session filter.
func errSessionWithoutFilter(vh *routev3.VirtualHost, i int, rt *routev3.Route) error {
	return fmt.Errorf("virtual host %s, route %d (%s): a session for a stateful session filter the connection manager does not have: Envoy would ignore it", vh.GetName(), i, rt.GetName())
}

// keepSession gives a forwarded request's backends the route's session.
func keepSession(vh *routev3.VirtualHost, rt *routev3.Route, r *httpRequest, a *Answer) error {
	sess, err := sessionOf(vh, rt, r)
	if err != nil {
		return fmt.Errorf("virtual host %s, route %s: %w", vh.GetName(), rt.GetName(), err)
	}
	for i := range a.Backends {
		a.Backends[i].Session = sess
	}
	return nil
}
