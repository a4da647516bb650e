package envoysim

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// httpRequest is a request while Envoy works on it: pseudo-headers apart,
// header names lower case (HTTP/2's, and how Envoy stores them).
type httpRequest struct {
	method, scheme, authority, path string
	headers                         []Header
	// client are the addresses IP filters read.
	client clientAddresses
}

func newHTTPRequest(r Request) *httpRequest {
	out := &httpRequest{method: r.Method, scheme: r.Scheme, authority: r.Authority, path: r.Path}
	if out.method == "" {
		out.method = "GET"
	}
	if out.path == "" {
		out.path = "/"
	}
	if out.scheme == "" {
		out.scheme = "http"
		if r.TLS {
			out.scheme = "https"
		}
	}
	for _, h := range r.Headers {
		name := strings.ToLower(h.Name)
		switch name {
		case "host", ":authority":
			out.authority = h.Value
		case ":method":
			out.method = h.Value
		case ":path":
			out.path = h.Value
		case ":scheme":
			out.scheme = h.Value
		default:
			out.headers = append(out.headers, Header{Name: name, Value: h.Value})
		}
	}
	return out
}

// pathOnly is the path without query and fragment.
func (r *httpRequest) pathOnly() string {
	p, _, _ := strings.Cut(r.path, "?")
	p, _, _ = strings.Cut(p, "#")
	return p
}

// query returns the first value of a query parameter, URL-decoded.
func (r *httpRequest) query(name string) (string, bool) {
	_, q, ok := strings.Cut(r.path, "?")
	if !ok {
		return "", false
	}
	q, _, _ = strings.Cut(q, "#")
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if k != name {
			continue
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		return v, true
	}
	return "", false
}

func (r *httpRequest) header(name string) string {
	v, _ := r.headerValues(name)
	return v
}

// headerValues returns a header's values joined with ',' (pseudo-headers
// included), and whether it is present.
func (r *httpRequest) headerValues(name string) (string, bool) {
	name = strings.ToLower(name)
	switch name {
	case ":method":
		return r.method, true
	case ":authority", "host":
		return r.authority, r.authority != ""
	case ":path":
		return r.path, true
	case ":scheme":
		return r.scheme, true
	}
	var vals []string
	for _, h := range r.headers {
		if h.Name == name {
			vals = append(vals, h.Value)
		}
	}
	return strings.Join(vals, ","), len(vals) > 0
}

func (r *httpRequest) clone() *httpRequest {
	c := *r
	c.headers = slices.Clone(r.headers)
	return &c
}

func (r *httpRequest) export() *HTTPRequest {
	return &HTTPRequest{Method: r.method, Scheme: r.scheme, Authority: r.authority, Path: r.path, Headers: slices.Clone(r.headers)}
}

// mutation is one level's headers_to_remove and headers_to_add.
type mutation struct {
	remove []string
	add    []*corev3.HeaderValueOption
}

// apply follows Envoy's header parser: a level's removals happen before its
// additions; each addition's append_action (or the deprecated append flag)
// decides between appending a line, adding only when absent, and
// overwriting; empty values are skipped unless keep_empty_value.
func (m mutation) apply(headers []Header, info streamInfo) ([]Header, error) {
	for _, name := range m.remove {
		name = strings.ToLower(name)
		headers = slices.DeleteFunc(headers, func(h Header) bool { return h.Name == name })
	}
	for _, o := range m.add {
		if err := understand(o, "header", "append", "append_action", "keep_empty_value"); err != nil {
			return nil, err
		}
		if err := understand(o.GetHeader(), "key", "value"); err != nil {
			return nil, err
		}
		name, value := strings.ToLower(o.GetHeader().GetKey()), o.GetHeader().GetValue()
		value, err := substitute(value, headers, info)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", name, err)
		}
		if value == "" && !o.GetKeepEmptyValue() {
			continue
		}
		action := o.GetAppendAction()
		if o.GetAppend() != nil {
			action = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			if o.GetAppend().GetValue() {
				action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
			}
		}
		exists := slices.ContainsFunc(headers, func(h Header) bool { return h.Name == name })
		switch action {
		case corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
			headers = append(headers, Header{Name: name, Value: value})
		case corev3.HeaderValueOption_ADD_IF_ABSENT:
			if !exists {
				headers = append(headers, Header{Name: name, Value: value})
			}
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
			if !exists && action == corev3.HeaderValueOption_OVERWRITE_IF_EXISTS {
				continue
			}
			headers = slices.DeleteFunc(headers, func(h Header) bool { return h.Name == name })
			headers = append(headers, Header{Name: name, Value: value})
		default:
			return nil, errUnsupportedf("header %s: append_action %v", name, action)
		}
	}
	return headers, nil
}

// reqOperator is Envoy's %REQ(name)% command operator: a request header,
// or the alternative after "?" when it is missing, at most max bytes.
var reqOperator = regexp.MustCompile(`^REQ\(([\w-]+)(?:\?([\w-]+))?\)(?::(\d+))?$`)

// streamInfo is what command operators read of a request's stream.
type streamInfo struct {
	// start is when the request started (%START_TIME%).
	start time.Time
	// ja3 and ja4 are the client's TLS fingerprints, when the listener's
	// TLS inspector computes them.
	ja3, ja4 string
}

// substitute follows Envoy's custom header values: "%%" is a literal "%",
// %REQ(...)% the request's header (empty when missing, as header values
// omit what a command operator cannot give), %START_TIME% or
// %START_TIME(format)% when the request started, and
// %TLS_JA3_FINGERPRINT% and %TLS_JA4_FINGERPRINT% the client's TLS
// fingerprints (empty when the TLS inspector computes none); other
// command operators are beyond the simulator, and a lone "%" is what
// Envoy rejects the configuration over.
func substitute(value string, headers []Header, info streamInfo) (string, error) {
	if !strings.Contains(value, "%") {
		return value, nil
	}
	var b strings.Builder
	for rest := value; rest != ""; {
		i := strings.IndexByte(rest, '%')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i+1:]
		if strings.HasPrefix(rest, "%") {
			b.WriteByte('%')
			rest = rest[1:]
			continue
		}
		j := strings.IndexByte(rest, '%')
		if strings.HasPrefix(rest, "START_TIME(") {
			// A format holds % of its own: the operator ends at ")%".
			if k := strings.Index(rest, ")%"); k >= 0 {
				j = k + 1
			}
		}
		if j < 0 {
			return "", fmt.Errorf("value %q has an unterminated %% command operator: Envoy rejects the configuration", value)
		}
		op := rest[:j]
		rest = rest[j+1:]
		if t, ok := strings.CutPrefix(op, "START_TIME"); ok {
			v, err := startTime(t, info.start)
			if err != nil {
				return "", fmt.Errorf("value %q: %w", value, err)
			}
			b.WriteString(v)
			continue
		}
		switch op {
		case "TLS_JA3_FINGERPRINT":
			b.WriteString(info.ja3)
			continue
		case "TLS_JA4_FINGERPRINT":
			b.WriteString(info.ja4)
			continue
		}
		m := reqOperator.FindStringSubmatch(op)
		if m == nil {
			return "", errUnsupportedf("value %q: command operator %%%s%%", value, op)
		}
		v := headerValue(headers, m[1])
		if v == "" && m[2] != "" {
			v = headerValue(headers, m[2])
		}
		if m[3] != "" {
			if n, err := strconv.Atoi(m[3]); err == nil && n < len(v) {
				v = v[:n]
			}
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// headerValue is the first value of a header, "" when it is missing.
func headerValue(headers []Header, name string) string {
	name = strings.ToLower(name)
	for _, h := range headers {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// startTime formats %START_TIME% (RFC 3339 with milliseconds, in UTC)
// or %START_TIME(format)%: strftime's %Y %m %d %H %M %S, %s for seconds
// since the epoch, and %1f to %9f for that many digits of the second's
// fraction, as Envoy's DateFormatter reads them.
func startTime(arg string, t time.Time) (string, error) {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	t = t.UTC()
	if arg == "" {
		return t.Format("2006-01-02T15:04:05.000Z"), nil
	}
	format, ok := strings.CutPrefix(arg, "(")
	format, closed := strings.CutSuffix(format, ")")
	if !ok || !closed {
		return "", errUnsupportedf("command operator START_TIME%s", arg)
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch c := format[i]; {
		case c == 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case c == 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case c == 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case c == 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case c == 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case c == 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case c == 's':
			fmt.Fprintf(&b, "%d", t.Unix())
		case c == '%':
			b.WriteByte('%')
		case c >= '1' && c <= '9' && i+1 < len(format) && format[i+1] == 'f':
			digits := int(c - '0')
			fmt.Fprintf(&b, "%09d", t.Nanosecond())
			s := b.String()
			b.Reset()
			b.WriteString(s[:len(s)-9+digits])
			i++
		default:
			return "", errUnsupportedf("START_TIME format %%%c", c)
		}
	}
	return b.String(), nil
}
