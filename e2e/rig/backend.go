package rig

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/e2e/harness"
)

// EchoImage is the image of the suite's echo server, which its backend
// Pods run; AuthzImage, RateLimitImage and JWKSImage those of the
// authorization and rate limit services, the JWKS endpoint and the
// OpenTelemetry collector of our tests (cmd/authz-server,
// cmd/ratelimit-server, cmd/jwks-server, cmd/otlp-collector).
const (
	EchoImage      = "gateway-api/echo-basic"
	AuthzImage     = "isobar-e2e/authz-server"
	RateLimitImage = "isobar-e2e/ratelimit-server"
	JWKSImage      = "isobar-e2e/jwks-server"
	OTLPImage      = "isobar-e2e/otlp-collector"
)

// runBackend plays a Pod of the suite's backends as a kubelet runs its
// container: echo-basic, built from the conformance module, or one of our
// test servers, with the Pod's environment and mounts, in a network
// namespace of its own so that it listens on exactly the ports it would
// in the Pod. What it prints is the Pod's log. The suite's CoreDNS Pod is
// played by a DNS server in a namespace of its own that answers every
// query NXDOMAIN. Any other Pod runs nothing.
func (f *Fleet) runBackend(pod *corev1.Pod) (func(), error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, nil
	}
	c := &pod.Spec.Containers[0]
	binary := "echo-basic"
	switch {
	case strings.Contains(c.Image, AuthzImage):
		binary = "authz-server"
	case strings.Contains(c.Image, RateLimitImage):
		binary = "ratelimit-server"
	case strings.Contains(c.Image, JWKSImage):
		binary = "jwks-server"
	case strings.Contains(c.Image, OTLPImage):
		binary = "otlp-collector"
	}
	switch {
	case strings.Contains(c.Image, EchoImage) || binary != "echo-basic":
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		p, err := f.env.RunPodProcessWith(f.ctx, f.kubeconfig, pod, c.Name, binary,
			harness.ProcessOptions{Netns: true, Output: f.Logs.writer(key)})
		if err != nil {
			return nil, err
		}
		f.network.Add(pod.Status.PodIP, p.Netns)
		stop := func() {
			f.network.Remove(pod.Status.PodIP)
			_, _ = p.Stop(5 * time.Second)
			p.Netns.Close()
		}
		if err := waitListening(f.ctx, p.Netns, c); err != nil {
			stop()
			return nil, fmt.Errorf("pod %s: %w\n%s", key, err, p.Output())
		}
		return stop, nil
	case c.Name == "coredns":
		return f.runDNS(pod)
	}
	return nil, nil
}

// waitListening waits until the container accepts connections on the TCP
// ports it declares, as a readiness probe would.
func waitListening(ctx context.Context, ns *harness.Netns, c *corev1.Container) error {
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range c.Ports {
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			continue
		}
		for {
			conn, err := ns.Dial(ctx, "tcp", int(p.ContainerPort))
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("port %d not listening after 10s: %w", p.ContainerPort, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// coreDNSPort is where the suite's Corefile has CoreDNS listen (".:53").
const coreDNSPort = 53

// runDNS plays the suite's CoreDNS Pod in a namespace of its own, as its
// Corefile configures it: "whoami" for foo.bar.com (an A record of the
// client's address), and for any other name a forward to public resolvers,
// which this machine cannot reach (SERVFAIL).
func (f *Fleet) runDNS(pod *corev1.Pod) (func(), error) {
	ns, err := harness.NewNetns()
	if err != nil {
		return nil, err
	}
	var pc net.PacketConn
	if err := ns.Do(func() (err error) {
		pc, err = net.ListenPacket("udp", ":"+strconv.Itoa(coreDNSPort))
		return err
	}); err != nil {
		ns.Close()
		return nil, err
	}
	go answerDNS(pc)
	f.network.Add(pod.Status.PodIP, ns)
	return func() {
		f.network.Remove(pod.Status.PodIP)
		pc.Close()
		ns.Close()
	}, nil
}

func answerDNS(pc net.PacketConn) {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var q dns.Msg
		if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
			continue
		}
		var reply dns.Msg
		if name := dns.Fqdn(q.Question[0].Name); dns.IsSubDomain("foo.bar.com.", name) {
			reply.SetReply(&q)
			if addr, ok := from.(*net.UDPAddr); ok && q.Question[0].Qtype == dns.TypeA {
				reply.Answer = append(reply.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: addr.IP})
			}
		} else {
			reply.SetRcode(&q, dns.RcodeServerFailure)
		}
		if out, err := reply.Pack(); err == nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}
