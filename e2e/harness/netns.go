package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace of its own, as a Pod has in a cluster: a
// loopback interface, up, and nothing else. A process in it listens on its
// ports without colliding with another Pod's; a connection to it is opened
// from inside (Dial), and so are the sockets of a server the test runs for
// a Pod (Do).
type Netns struct {
	f *os.File
}

// NewNetns makes a network namespace. It is gone once Close is called and
// nothing started in it runs.
func NewNetns() (*Netns, error) {
	var n *Netns
	err := onOwnThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		n = &Netns{f: f}
		return loopbackUp()
	})
	if err != nil && n != nil {
		n.Close()
	}
	return n, err
}

// NetnsOf is the network namespace of a process started with one of its
// own (ProcessOptions.Netns), with its loopback interface set up.
func NetnsOf(pid int) (*Netns, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, err
	}
	n := &Netns{f: f}
	if err := n.Do(loopbackUp); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// onOwnThread runs fn on a thread of its own, which fn may move into
// another network namespace, and moves the thread back before it serves
// other goroutines. The thread is never ended: a thread that exits takes
// with it, by their parent-death signal, the processes it started
// (harness processes are started with Pdeathsig).
func onOwnThread(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer home.Close()
		err = fn()
		if rerr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// Stays locked: the thread ends with the goroutine rather
			// than serve others in the wrong namespace.
			done <- errors.Join(err, fmt.Errorf("returning to the test's network namespace: %w", rerr))
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// loopbackUp sets lo up in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	return nil
}

// Do runs fn on a thread inside the namespace: sockets fn opens and
// processes it starts belong to it.
func (n *Netns) Do(fn func() error) error {
	return onOwnThread(func() error {
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return fn()
	})
}

// Dial connects to a port of the namespace's loopback address, as another
// Pod's connection reaches this Pod's port.
func (n *Netns) Dial(ctx context.Context, network string, port int) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		return err
	})
	return c, err
}

// Close lets the namespace go once nothing in it is left.
func (n *Netns) Close() error { return n.f.Close() }

// Network is the Pods' network as other Pods reach it: a Pod with a
// namespace of its own is reached inside it, any other at its Loopback
// address.
type Network struct {
	mu   sync.Mutex
	pods map[string]*Netns // Pod IP -> its namespace
}

// Add gives the Pod with an IP its namespace.
func (w *Network) Add(ip string, n *Netns) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[string]*Netns{}
	}
	w.pods[ip] = n
}

// Remove forgets the Pod with an IP.
func (w *Network) Remove(ip string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, ip)
}

// Dial connects to a Pod's address and port ("tcp" or "udp"): nothing
// listens there unless the Pod's process does, on that very port.
func (w *Network) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("address %s: %w", address, err)
	}
	w.mu.Lock()
	n := w.pods[host]
	w.mu.Unlock()
	if n != nil {
		return n.Dial(ctx, network, port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort(Loopback(host), portText))
}
