package conformance

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/gateway-api/conformance/echo-basic/tcpserver"
	"sigs.k8s.io/gateway-api/conformance/echo-basic/udpechoserver"

	"isobar.dev/controller/pkg/envoysim"
)

// echoBackends answer HTTP requests as the suite's echo server
// (conformance/echo-basic) does in each backend Pod: /status/NNN answers
// NNN, /retry/ fails a request (by uuid) until its succeedAfter-th try,
// ?delay= answers late, and every echoed request is logged.
type echoBackends struct {
	logs *podLogs

	mu sync.Mutex
	// tries counts /retry/ tries per Pod and uuid, as each echo server
	// process does.
	tries map[string]int
}

var statusPath = regexp.MustCompile(`^/status/(\d\d\d)$`)

// attempt is one try at pod, from the Envoy that sends r.
func (b *echoBackends) attempt(pod *corev1.Pod, from string, r *envoysim.HTTPRequest) envoysim.Attempt {
	u, err := url.ParseRequestURI(r.Path)
	if err != nil {
		return envoysim.Attempt{Status: 400}
	}
	q := u.Query()
	delay := func(key string) time.Duration {
		d, _ := time.ParseDuration(q.Get(key))
		return d
	}
	if m := statusPath.FindStringSubmatch(r.Path); m != nil {
		code, _ := strconv.Atoi(m[1])
		return envoysim.Attempt{Status: code}
	} else if strings.HasPrefix(u.Path, "/status/") {
		return envoysim.Attempt{Status: 400}
	}
	if strings.HasPrefix(u.Path, "/retry/") {
		uuid := q.Get("uuid")
		succeedAfter, err := strconv.Atoi(q.Get("succeedAfter"))
		if uuid == "" || err != nil {
			return envoysim.Attempt{Status: 400}
		}
		b.mu.Lock()
		key := pod.Namespace + "/" + pod.Name + "/" + uuid
		failing := b.tries[key] < succeedAfter
		if failing {
			if b.tries == nil {
				b.tries = map[string]int{}
			}
			b.tries[key]++
		}
		b.mu.Unlock()
		if failing {
			// Without responseCode the server resets the connection.
			code, err := strconv.Atoi(q.Get("responseCode"))
			return envoysim.Attempt{Status: code, Reset: err != nil, Delay: delay("delayRetry")}
		}
	}
	b.logs.printf(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, "Echoing back request made to %s to client (%s)", r.Path, from)
	return envoysim.Attempt{Status: 200, Delay: delay("delay")}
}

// podEnv is a container's environment variable as the kubelet sets it:
// a literal value, or the Pod's name or namespace.
func podEnv(pod *corev1.Pod, c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				return pod.Name
			case "metadata.namespace":
				return pod.Namespace
			}
			return ""
		}
		return e.Value
	}
	return ""
}

// serveTCP answers a connection to port of pod as the suite's TCP echo
// server (echo-basic's tcpserver) does: a welcome, then PING, IS_TLS and
// TEST (the Pod's context and the TLS it saw). Its TLS port terminates TLS
// with the certificate the Pod mounts.
func (b *echoBackends) serveTCP(ctx context.Context, f *fleet, pod *corev1.Pod, port string, conn net.Conn) {
	if len(pod.Spec.Containers) == 0 {
		return
	}
	c := &pod.Spec.Containers[0]
	if podEnv(pod, c, "TCP_ECHO_SERVER") == "" {
		return
	}
	assertions := tcpserver.TCPAssertions{Context: tcpserver.Context{
		Namespace: podEnv(pod, c, "NAMESPACE"), Ingress: podEnv(pod, c, "INGRESS_NAME"),
		Service: podEnv(pod, c, "SERVICE_NAME"), Pod: podEnv(pod, c, "POD_NAME"),
		TCPPort: cmp.Or(podEnv(pod, c, "TCP_PORT"), "3000"), TLSPort: cmp.Or(podEnv(pod, c, "TLS_PORT"), "8443"),
	}}
	if port == assertions.TLSPort {
		cert, err := f.backendCertificate(ctx, pod)
		if err != nil {
			return
		}
		tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return
		}
		st := tc.ConnectionState()
		assertions.IsTLS = true
		assertions.TLSAssertion = &tcpserver.TLSAssertions{
			NegotiatedProtocol: st.NegotiatedProtocol, ServerName: st.ServerName, Version: tls.VersionName(st.Version),
			CipherSuite: tls.CipherSuiteName(st.CipherSuite), Curves: st.CurveID.String(),
		}
		conn = tc
	} else if port != assertions.TCPPort {
		return
	}
	payload, err := json.Marshal(assertions)
	if err != nil {
		return
	}
	fmt.Fprint(conn, tcpserver.WelcomeMessage)
	s := bufio.NewScanner(conn)
	for s.Scan() {
		switch s.Text() {
		case "TEST":
			fmt.Fprintf(conn, "%s\n", payload)
		case "IS_TLS":
			fmt.Fprintf(conn, "%t\n", assertions.IsTLS)
		case "PING":
			fmt.Fprint(conn, "PONG\n")
		}
	}
}

// answerUDP is the answer of pod's UDP server to a datagram: the suite's
// UDP echo server (echo-basic's udpechoserver) echoes it with its Pod's
// context; its CoreDNS answers DNS queries. Nil is no answer.
func (b *echoBackends) answerUDP(pod *corev1.Pod, data []byte) []byte {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		switch {
		case podEnv(pod, c, "UDP_ECHO_SERVER") != "":
			out, err := json.Marshal(udpechoserver.EchoResponse{Request: string(data), Context: udpechoserver.Context{
				Namespace: podEnv(pod, c, "NAMESPACE"), Ingress: podEnv(pod, c, "INGRESS_NAME"),
				Service: podEnv(pod, c, "SERVICE_NAME"), Pod: podEnv(pod, c, "POD_NAME"),
			}})
			if err != nil {
				return nil
			}
			return out
		case c.Name == "coredns":
			var q dns.Msg
			if err := q.Unpack(data); err != nil {
				return nil
			}
			var reply dns.Msg
			reply.SetRcode(&q, dns.RcodeNameError)
			out, err := reply.Pack()
			if err != nil {
				return nil
			}
			return out
		}
	}
	return nil
}

// backendCertificate is the serving certificate an echo backend Pod
// mounts (echo-basic's HTTP server reads TLS_SERVER_PRIVKEY, its TCP
// server TLS_SERVER_PRIV_KEY).
func (f *fleet) backendCertificate(ctx context.Context, pod *corev1.Pod) (tls.Certificate, error) {
	if len(pod.Spec.Containers) == 0 {
		return tls.Certificate{}, fmt.Errorf("pod %s/%s has no container", pod.Namespace, pod.Name)
	}
	c := &pod.Spec.Containers[0]
	mounts, err := f.env.Mount(ctx, pod, c)
	if err != nil {
		return tls.Certificate{}, err
	}
	key := cmp.Or(podEnv(pod, c, "TLS_SERVER_PRIVKEY"), podEnv(pod, c, "TLS_SERVER_PRIV_KEY"))
	return tls.LoadX509KeyPair(mounts.Rewrite(podEnv(pod, c, "TLS_SERVER_CERT")), mounts.Rewrite(key))
}
