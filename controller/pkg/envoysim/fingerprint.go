package envoysim

import (
	"crypto/md5" //nolint:gosec // JA3 is defined as an MD5; it identifies, it does not protect.
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
)

// A clientHello is what Envoy's TLS inspector reads of a ClientHello to
// fingerprint it: the legacy version, the cipher suites and the
// extensions, in the order the client sent them.
type clientHello struct {
	version    uint16
	ciphers    []uint16
	extensions []helloExtension
}

type helloExtension struct {
	typ  uint16
	data reader
}

// Extension types the fingerprints read.
const (
	extServerName          = 0x0000
	extSupportedGroups     = 0x000a
	extECPointFormats      = 0x000b
	extSignatureAlgorithms = 0x000d
	extALPN                = 0x0010
	extSupportedVersions   = 0x002b
)

var errShortHello = errors.New("the ClientHello is cut short")

// parseClientHello reads a ClientHello from the first bytes of a
// connection: TLS handshake records, whose payloads the handshake message
// may span.
func parseClientHello(records []byte) (*clientHello, error) {
	var msg []byte
	for len(records) >= 5 {
		if records[0] != 0x16 {
			return nil, fmt.Errorf("record type %d is not a handshake", records[0])
		}
		n := int(binary.BigEndian.Uint16(records[3:5]))
		if len(records) < 5+n {
			return nil, errShortHello
		}
		msg = append(msg, records[5:5+n]...)
		records = records[5+n:]
		if len(msg) >= 4 && len(msg) >= 4+int(msg[1])<<16|int(msg[2])<<8|int(msg[3]) {
			break
		}
	}
	if len(msg) < 4 || msg[0] != 1 {
		return nil, errors.New("not a ClientHello")
	}
	body := reader(msg[4 : 4+min(len(msg)-4, int(msg[1])<<16|int(msg[2])<<8|int(msg[3]))])
	h := &clientHello{}
	var ok bool
	if h.version, ok = body.u16(); !ok {
		return nil, errShortHello
	}
	if !body.skip(32) { // random
		return nil, errShortHello
	}
	if _, ok := body.prefixed(1); !ok { // session id
		return nil, errShortHello
	}
	suites, ok := body.prefixed(2)
	if !ok {
		return nil, errShortHello
	}
	for len(suites) >= 2 {
		c, _ := suites.u16()
		h.ciphers = append(h.ciphers, c)
	}
	if _, ok := body.prefixed(1); !ok { // compression methods
		return nil, errShortHello
	}
	if len(body) == 0 {
		return h, nil // no extensions
	}
	exts, ok := body.prefixed(2)
	if !ok {
		return nil, errShortHello
	}
	for len(exts) > 0 {
		typ, ok := exts.u16()
		if !ok {
			return nil, errShortHello
		}
		data, ok := exts.prefixed(2)
		if !ok {
			return nil, errShortHello
		}
		h.extensions = append(h.extensions, helloExtension{typ, data})
	}
	return h, nil
}

// reader reads a TLS message's fields.
type reader []byte

func (r *reader) u16() (uint16, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := binary.BigEndian.Uint16(*r)
	*r = (*r)[2:]
	return v, true
}

func (r *reader) skip(n int) bool {
	if len(*r) < n {
		return false
	}
	*r = (*r)[n:]
	return true
}

// prefixed reads a field whose length comes first, in size bytes.
func (r *reader) prefixed(size int) (reader, bool) {
	if len(*r) < size {
		return nil, false
	}
	n := 0
	for _, b := range (*r)[:size] {
		n = n<<8 | int(b)
	}
	if len(*r) < size+n {
		return nil, false
	}
	out := (*r)[size : size+n]
	*r = (*r)[size+n:]
	return out, true
}

// grease reports whether v is one of RFC 8701's GREASE values, which both
// fingerprints leave out where Envoy does.
func grease(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

func (h *clientHello) extension(typ uint16) (reader, bool) {
	for _, e := range h.extensions {
		if e.typ == typ {
			return e.data, true
		}
	}
	return nil, false
}

// JA3 is the JA3 fingerprint as Envoy's TLS inspector computes it: the MD5,
// in hex, of "version,ciphers,extensions,groups,point formats", each list
// of decimal values joined by "-". Envoy leaves GREASE values out of the
// ciphers and extensions, and keeps them in the groups.
func (h *clientHello) JA3() string {
	dec := func(vs []uint16) string {
		parts := make([]string, 0, len(vs))
		for _, v := range vs {
			parts = append(parts, strconv.Itoa(int(v)))
		}
		return strings.Join(parts, "-")
	}
	ciphers := slices.DeleteFunc(slices.Clone(h.ciphers), grease)
	var exts, groups, points []uint16
	for _, e := range h.extensions {
		if !grease(e.typ) {
			exts = append(exts, e.typ)
		}
	}
	if d, ok := h.extension(extSupportedGroups); ok {
		if list, ok := d.prefixed(2); ok {
			for len(list) >= 2 {
				g, _ := list.u16()
				groups = append(groups, g)
			}
		}
	}
	if d, ok := h.extension(extECPointFormats); ok {
		if list, ok := d.prefixed(1); ok {
			for _, p := range list {
				points = append(points, uint16(p))
			}
		}
	}
	s := fmt.Sprintf("%d,%s,%s,%s,%s", h.version, dec(ciphers), dec(exts), dec(groups), dec(points))
	sum := md5.Sum([]byte(s)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// JA4 is FoxIO's JA4 fingerprint as Envoy's TLS inspector computes it:
// "t", the highest version offered, "d" or "i" for an SNI or none, the
// counts of ciphers and extensions, the first ALPN's first and last
// characters, then the truncated SHA-256 of the sorted ciphers and of the
// sorted extensions (without SNI and ALPN) with the signature algorithms.
func (h *clientHello) JA4() string {
	var b strings.Builder
	b.WriteString("t")
	b.WriteString(ja4Version(h))
	if _, ok := h.extension(extServerName); ok {
		b.WriteString("d")
	} else {
		b.WriteString("i")
	}
	ciphers := slices.DeleteFunc(slices.Clone(h.ciphers), grease)
	var exts, sigAlgs []uint16
	count := 0
	for _, e := range h.extensions {
		if grease(e.typ) {
			continue
		}
		count++
		if e.typ == extServerName || e.typ == extALPN {
			continue
		}
		exts = append(exts, e.typ)
		if e.typ == extSignatureAlgorithms {
			d := e.data
			if _, ok := d.u16(); ok {
				for len(d) >= 2 {
					a, _ := d.u16()
					sigAlgs = append(sigAlgs, a)
				}
			}
		}
	}
	fmt.Fprintf(&b, "%02d%02d", min(len(ciphers), 99), min(count, 99))
	b.WriteString(ja4ALPN(h))
	b.WriteString("_")
	b.WriteString(ja4Hash(ciphers, nil))
	b.WriteString("_")
	b.WriteString(ja4Hash(exts, sigAlgs))
	return b.String()
}

func ja4Version(h *clientHello) string {
	name := func(v uint16) string {
		switch v {
		case 0x0304:
			return "13"
		case 0x0303:
			return "12"
		case 0x0302:
			return "11"
		case 0x0301:
			return "10"
		}
		return "00"
	}
	if d, ok := h.extension(extSupportedVersions); ok {
		list, ok := d.prefixed(1)
		if !ok {
			return "00"
		}
		var highest uint16
		for len(list) >= 2 {
			v, _ := list.u16()
			if !grease(v) && v > highest {
				highest = v
			}
		}
		if highest != 0 {
			return name(highest)
		}
	}
	return name(h.version)
}

// ja4ALPN is the first ALPN protocol's first and last characters, or, when
// either is not a letter or digit, the first's high and the last's low
// nibble in hex (Envoy's ja4_alpn_hex_conversion_fix); "00" without one.
func ja4ALPN(h *clientHello) string {
	d, ok := h.extension(extALPN)
	if !ok {
		return "00"
	}
	if _, ok := d.u16(); !ok || len(d) < 1 {
		return "00"
	}
	p, ok := d.prefixed(1)
	if !ok || len(p) == 0 {
		return "00"
	}
	first, last := p[0], p[len(p)-1]
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	if !alnum(first) || !alnum(last) {
		return fmt.Sprintf("%x%x", first>>4, last&0x0f)
	}
	return string([]byte{first, last})
}

// ja4Hash is the first 12 hex digits of the SHA-256 of the sorted values,
// as 4-digit hex joined by ",", with "_" and the unsorted tail after them
// when there is one; twelve zeros for no values.
func ja4Hash(values, tail []uint16) string {
	if len(values) == 0 {
		return "000000000000"
	}
	hexList := func(vs []uint16) string {
		parts := make([]string, 0, len(vs))
		for _, v := range vs {
			parts = append(parts, fmt.Sprintf("%04x", v))
		}
		return strings.Join(parts, ",")
	}
	s := hexList(slices.Sorted(slices.Values(values)))
	if len(tail) > 0 {
		s += "_" + hexList(tail)
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// fingerprints are a TLS client's, as the TLS inspector computed them.
type fingerprints struct{ ja3, ja4 string }

// inspectorFingerprints follows a TLS inspector's configuration: the
// fingerprints it computes of the request's ClientHello. A ClientHello it
// cannot read gives none, as Envoy's inspector then finds no TLS.
func inspectorFingerprints(f *listenerv3.ListenerFilter, req Request) (fingerprints, error) {
	cfg, err := unpack[tlsinspectorv3.TlsInspector](f.GetTypedConfig(), "TLS inspector")
	if err != nil {
		return fingerprints{}, err
	}
	if err := understand(cfg, "enable_ja3_fingerprinting", "enable_ja4_fingerprinting"); err != nil {
		return fingerprints{}, err
	}
	if !req.TLS || req.ClientHello == nil {
		return fingerprints{}, nil
	}
	h, err := parseClientHello(req.ClientHello)
	if err != nil {
		return fingerprints{}, nil //nolint:nilerr // no TLS found: no fingerprints
	}
	var out fingerprints
	if cfg.GetEnableJa3Fingerprinting().GetValue() {
		out.ja3 = h.JA3()
	}
	if cfg.GetEnableJa4Fingerprinting().GetValue() {
		out.ja4 = h.JA4()
	}
	return out, nil
}
