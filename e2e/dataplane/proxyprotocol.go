package dataplane

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// proxyV2Signature starts a PROXY protocol v2 header.
var proxyV2Signature = []byte("\r\n\r\n\x00\r\nQUIT\n")

// readProxyHeader is Envoy's PROXY protocol listener filter: it reads the
// header a load balancer sends before the client's bytes, v1 (text) or
// v2 (binary), within timeout, and returns the client's address in it
// ("" for a LOCAL or UNKNOWN header: the connection's own address
// stands) and the connection, which goes on with what follows the
// header. A connection that does not start with one is an error: Envoy
// closes it.
func readProxyHeader(c net.Conn, timeout time.Duration) (string, net.Conn, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	br := bufio.NewReader(c)
	start, err := br.Peek(len(proxyV2Signature))
	if err != nil {
		return "", nil, fmt.Errorf("PROXY protocol header: %w", err)
	}
	var src string
	switch {
	case bytes.Equal(start, proxyV2Signature):
		src, err = readProxyV2(br)
	case bytes.HasPrefix(start, []byte("PROXY ")):
		src, err = readProxyV1(br)
	default:
		err = errors.New("the connection does not start with a PROXY protocol header")
	}
	if err != nil {
		return "", nil, err
	}
	return src, &replayConn{Conn: c, r: br}, nil
}

// readProxyV1 reads "PROXY TCP4|TCP6 src dst sport dport\r\n" or
// "PROXY UNKNOWN...\r\n", at most 107 bytes.
func readProxyV1(br *bufio.Reader) (string, error) {
	var line []byte
	for len(line) < 107 {
		b, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		line = append(line, b)
		if bytes.HasSuffix(line, []byte("\r\n")) {
			break
		}
	}
	if !bytes.HasSuffix(line, []byte("\r\n")) {
		return "", errors.New("a PROXY protocol v1 header longer than 107 bytes")
	}
	f := strings.Fields(string(line))
	switch {
	case len(f) >= 2 && f[1] == "UNKNOWN":
		return "", nil
	case len(f) != 6 || f[1] != "TCP4" && f[1] != "TCP6":
		return "", fmt.Errorf("PROXY protocol v1 header %q", strings.TrimSpace(string(line)))
	}
	ip := net.ParseIP(f[2])
	if ip == nil || (f[1] == "TCP4") != (ip.To4() != nil) {
		return "", fmt.Errorf("PROXY protocol v1 header %q: source %q", strings.TrimSpace(string(line)), f[2])
	}
	return ip.String(), nil
}

// readProxyV2 reads the binary header: signature, version and command,
// family and protocol, length, addresses.
func readProxyV2(br *bufio.Reader) (string, error) {
	head := make([]byte, 16)
	if _, err := io.ReadFull(br, head); err != nil {
		return "", err
	}
	verCmd, fam := head[12], head[13]
	body := make([]byte, binary.BigEndian.Uint16(head[14:16]))
	if _, err := io.ReadFull(br, body); err != nil {
		return "", err
	}
	if verCmd>>4 != 2 {
		return "", fmt.Errorf("PROXY protocol v2 header of version %d", verCmd>>4)
	}
	switch verCmd & 0xf {
	case 0: // LOCAL: the load balancer's own connection (a health check)
		return "", nil
	case 1: // PROXY
	default:
		return "", fmt.Errorf("PROXY protocol v2 command %d", verCmd&0xf)
	}
	switch fam {
	case 0x11: // TCP over IPv4
		if len(body) < 12 {
			return "", errors.New("a PROXY protocol v2 IPv4 header too short")
		}
		return net.IP(body[0:4]).String(), nil
	case 0x21: // TCP over IPv6
		if len(body) < 36 {
			return "", errors.New("a PROXY protocol v2 IPv6 header too short")
		}
		return net.IP(body[0:16]).String(), nil
	case 0x00: // UNSPEC
		return "", nil
	}
	return "", fmt.Errorf("PROXY protocol v2 family and protocol %#x", fam)
}
