package harness

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Pod addresses come in blocks, one per NodeAgent: 10.B.0.0/16 for B from
// firstBlock to lastBlock, whose Pods listen on 127.B.x.y (Loopback). A
// Pod's address says where its processes listen, so two Pods with one
// address would share ports: a Pod of a new rig could not bind the port a
// Pod of the rig before it is still stopping with, and the processes
// connecting to it would reach the old one (with another fleet's
// certificate). So an agent claims a block no agent holds, in this test
// binary or in another one running beside it (go test runs packages side
// by side), and holds it until every process it started has stopped.
const (
	firstBlock = 200
	lastBlock  = 254
)

// A block is the Pod addresses an agent hands out, claimed for as long as
// the sentinel listens: on the block's last address but one, which no Pod
// gets.
type block struct {
	next     netip.Addr
	sentinel net.Listener
}

// claimBlock claims the first block no agent holds.
func claimBlock() (*block, error) {
	for b := firstBlock; b <= lastBlock; b++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.%d.255.254:8000", b))
		if err != nil {
			continue // held by another agent
		}
		return &block{next: netip.AddrFrom4([4]byte{10, byte(b), 0, 10}), sentinel: l}, nil
	}
	return nil, fmt.Errorf("every block of Pod addresses, 10.%d.0.0/16 to 10.%d.0.0/16, is held by a running node agent", firstBlock, lastBlock)
}

// errBlockFull is a block out of addresses: an agent's Pods are fewer.
var errBlockFull = errors.New("the node agent's block of Pod addresses is used up")

// take returns the block's next Pod address.
func (b *block) take() (string, error) {
	a := b.next.As4()
	if a[2] == 255 && a[3] >= 253 {
		return "", errBlockFull
	}
	ip := b.next.String()
	b.next = b.next.Next()
	return ip, nil
}

// release gives the block up, once its Pods' processes have stopped.
func (b *block) release() { _ = b.sentinel.Close() }

// PodAddress is an address for a Pod run without a node agent (the demo
// runs its controller's Pod so): one of a block claimed as an agent
// claims one, so that the Pod's ports are its own whatever else listens
// on this machine. release gives the block up once the Pod's processes
// have stopped.
func PodAddress() (ip string, release func(), err error) {
	b, err := claimBlock()
	if err != nil {
		return "", nil, err
	}
	ip, err = b.take()
	if err != nil {
		b.release()
		return "", nil, err
	}
	return ip, b.release, nil
}
