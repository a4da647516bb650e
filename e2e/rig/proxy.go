package rig

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/e2e/dataplane"
	"isobar.dev/e2e/harness"
)

// serviceCIDR is a loopback range: every Service's cluster IP is an
// address this machine can listen on and dial, so the suite's clients dial
// a Gateway's address as they would in a cluster.
const serviceCIDR = "127.64.0.0/16"

// kubeProxy stands in for kube-proxy in front of the Envoy fleets: it
// listens on the cluster IP and ports of every Envoy Service and passes
// each connection (each UDP client's datagrams) on, unchanged, to the
// target port of one of the Service's Envoy Pods whose simulated Envoy is
// Ready (its first configuration warmed), at the Pod's address.
type kubeProxy struct {
	fleet *Fleet
	// open are the sockets bound, by protocol and address, with their
	// close.
	open map[string]func()
}

func (p *kubeProxy) run(ctx context.Context) {
	p.open = map[string]func(){}
	defer func() {
		for _, stop := range p.open {
			stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		p.sync(ctx)
	}
}

// sync listens on the addresses of the Envoy Services there are, and stops
// listening on those of Services gone.
func (p *kubeProxy) sync(ctx context.Context) {
	var services corev1.ServiceList
	if err := p.fleet.env.Client.List(ctx, &services); err != nil {
		return
	}
	cidr := netip.MustParsePrefix(serviceCIDR)
	want := map[string]bool{}
	for _, s := range services.Items {
		ip, err := netip.ParseAddr(s.Spec.ClusterIP)
		if err != nil || !cidr.Contains(ip) || s.Spec.Selector[ComponentLabel] != EnvoyComponent {
			continue
		}
		svc := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		for _, port := range s.Spec.Ports {
			addr := net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(port.Port)))
			key := string(port.Protocol) + "/" + addr
			want[key] = true
			if p.open[key] != nil {
				continue
			}
			stop, err := p.listen(ctx, port.Protocol, addr, svc, port.Port)
			if err != nil {
				fmt.Fprintf(os.Stderr, "kube-proxy: %v\n", err)
				continue
			}
			p.open[key] = stop
		}
	}
	for key, stop := range p.open {
		if !want[key] {
			stop()
			delete(p.open, key)
		}
	}
}

func (p *kubeProxy) listen(ctx context.Context, protocol corev1.Protocol, addr string, svc types.NamespacedName, port int32) (func(), error) {
	network := "tcp"
	if protocol == corev1.ProtocolUDP {
		network = "udp"
	}
	backend := func(ctx context.Context) (net.Conn, error) {
		target, err := p.fleet.envoyAt(ctx, svc, port)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, target)
	}
	return dataplane.Bind(network, addr,
		func(c net.Conn) {
			up, err := backend(ctx)
			if err != nil {
				c.Close() // no ready endpoint: refused
				return
			}
			dataplane.Pipe(c, up)
		},
		func(pc net.PacketConn) { dataplane.RelayUDP(ctx, pc, backend) })
}

// envoyAt is where a Service port's traffic goes: the target port of one
// of its Envoy Pods whose Envoy is Ready, at the Pod's address.
func (f *Fleet) envoyAt(ctx context.Context, svc types.NamespacedName, port int32) (string, error) {
	s := &corev1.Service{}
	if err := f.env.Client.Get(ctx, svc, s); err != nil {
		return "", err
	}
	var target int32
	for _, p := range s.Spec.Ports {
		if p.Port == port {
			target = p.TargetPort.IntVal
		}
	}
	if target == 0 {
		return "", fmt.Errorf("service %s has no port %d", svc, port)
	}
	var pods corev1.PodList
	if err := f.env.Client.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(s.Spec.Selector)}); err != nil {
		return "", err
	}
	var ready []string
	for _, p := range pods.Items {
		if e := f.Envoy(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); e != nil {
			if e.Ready() {
				ready = append(ready, net.JoinHostPort(harness.Loopback(p.Status.PodIP), strconv.Itoa(int(target))))
			}
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("service %s: no Envoy is Ready", svc)
	}
	return ready[rand.IntN(len(ready))], nil
}
