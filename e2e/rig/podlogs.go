package rig

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// PodLogs stands in for the kubelet's log endpoint, which the suite reads
// to see that a mirrored request reached its backend: what the backend
// Pods' processes print.
type PodLogs struct {
	mu    sync.Mutex
	lines map[types.NamespacedName][]logLine
}

type logLine struct {
	at   time.Time
	text string
}

func (l *PodLogs) printf(pod types.NamespacedName, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines == nil {
		l.lines = map[types.NamespacedName][]logLine{}
	}
	l.lines[pod] = append(l.lines[pod], logLine{at: time.Now(), text: fmt.Sprintf(format, args...)})
}

// writer is a Pod's container output: each line it writes is a line of
// the Pod's log, stamped when it was written.
func (l *PodLogs) writer(pod types.NamespacedName) io.Writer {
	return &logWriter{logs: l, pod: pod}
}

type logWriter struct {
	logs    *PodLogs
	pod     types.NamespacedName
	mu      sync.Mutex
	partial []byte
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.logs.printf(w.pod, "%s", w.partial[:i])
		w.partial = w.partial[i+1:]
	}
}

// since is a Pod's log from a time on, as the kubelet serves it.
func (l *PodLogs) since(pod types.NamespacedName, t time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.lines[pod] {
		if !line.at.Before(t) {
			b.WriteString(line.text + "\n")
		}
	}
	return b.String()
}

var logPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$`)

// Wrap makes cfg's clients read Pod logs from l; every other request goes
// to the API server.
func (l *PodLogs) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			m := logPath.FindStringSubmatch(r.URL.Path)
			if r.Method != http.MethodGet || m == nil {
				return next.RoundTrip(r)
			}
			var since time.Time
			if v := r.URL.Query().Get("sinceTime"); v != "" {
				var err error
				if since, err = time.Parse(time.RFC3339, v); err != nil {
					return nil, fmt.Errorf("sinceTime %q: %w", v, err)
				}
			}
			body := l.since(types.NamespacedName{Namespace: m[1], Name: m[2]}, since)
			return &http.Response{
				StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader(body)),
				ContentLength: int64(len(body)), Request: r,
			}, nil
		})
	})
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
