package harness

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

// FreePort returns a loopback TCP port nothing listens on now, and one no
// other call in this test binary has returned: the kernel may hand a
// just-closed port out again at once, and two calls in a row once gave one
// process the same port for two of its listeners.
func FreePort(t testing.TB) int {
	t.Helper()
	given.Lock()
	defer given.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given.ports[port] {
			given.ports[port] = true
			return port
		}
	}
}

// FreePortString is FreePort as a flag's or an address's text.
func FreePortString(t testing.TB) string { return strconv.Itoa(FreePort(t)) }

// given are the ports FreePort has returned.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}
