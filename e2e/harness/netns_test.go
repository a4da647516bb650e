package harness

import (
	"context"
	"io"
	"net"
	"testing"
)

// Two Pods listen on the same port, each in its namespace, and each is
// reached at its own address; a port nothing listens on refuses.
func TestNetworkReachesEachPodOnItsPort(t *testing.T) {
	var w Network
	for _, pod := range []struct{ ip, says string }{{"10.244.9.1", "one"}, {"10.244.9.2", "two"}} {
		n, err := NewNetns()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		var l net.Listener
		if err := n.Do(func() (err error) {
			l, err = net.Listen("tcp", ":3000")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = io.WriteString(c, pod.says)
				c.Close()
			}
		}()
		w.Add(pod.ip, n)
	}
	ctx := context.Background()
	for ip, want := range map[string]string{"10.244.9.1": "one", "10.244.9.2": "two"} {
		c, err := w.Dial(ctx, "tcp", net.JoinHostPort(ip, "3000"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != want {
			t.Errorf("%s:3000 answered %q, %v; want %q", ip, got, err, want)
		}
		if c, err := w.Dial(ctx, "tcp", net.JoinHostPort(ip, "3001")); err == nil {
			c.Close()
			t.Errorf("%s:3001 accepted a connection; nothing listens there", ip)
		}
	}
}
