package envoysim

import (
	"encoding/binary"
	"testing"
)

// hello builds a ClientHello record: version, cipher suites and
// extensions in the order given.
func hello(version uint16, ciphers []uint16, exts ...helloExtension) []byte {
	u16 := func(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
	body := u16(nil, version)
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = u16(body, uint16(2*len(ciphers)))
	for _, c := range ciphers {
		body = u16(body, c)
	}
	body = append(body, 1, 0) // compression: null
	var ext []byte
	for _, e := range exts {
		ext = u16(ext, e.typ)
		ext = u16(ext, uint16(len(e.data)))
		ext = append(ext, e.data...)
	}
	body = u16(body, uint16(len(ext)))
	body = append(body, ext...)
	msg := append([]byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	return append(u16([]byte{0x16, 3, 1}, uint16(len(msg))), msg...)
}

// list is a TLS vector of 16-bit values with a size-byte length.
func list(size int, vs ...uint16) reader {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	if size == 1 {
		return append([]byte{byte(len(b))}, b...)
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}

// The fingerprints of the published examples: JA3's README
// ("769,47-53-5-10-49161-49162-49171-49172-50-56-19-4,0-10-11,23-24-25,0")
// and JA4's (a Chrome ClientHello, with GREASE values Envoy leaves out).
func TestFingerprints(t *testing.T) {
	sni := helloExtension{extServerName, []byte{0, 14, 0, 0, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm'}}
	ja3 := hello(769, []uint16{47, 53, 5, 10, 49161, 49162, 49171, 49172, 50, 56, 19, 4},
		sni, helloExtension{extSupportedGroups, list(2, 23, 24, 25)}, helloExtension{extECPointFormats, []byte{1, 0}})
	alpn := helloExtension{extALPN, append([]byte{0, 12, 2, 'h', '2', 8}, "http/1.1"...)}
	chrome := hello(0x0303,
		[]uint16{0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035},
		helloExtension{0x1a1a, nil}, sni, helloExtension{0x0017, nil}, helloExtension{0xff01, []byte{0}},
		helloExtension{extSupportedGroups, list(2, 0x2a2a, 0x001d, 0x0017, 0x0018)}, helloExtension{extECPointFormats, []byte{1, 0}},
		helloExtension{0x0023, nil}, alpn, helloExtension{0x0005, []byte{1, 0, 0, 0, 0}},
		helloExtension{extSignatureAlgorithms, list(2, 0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601)},
		helloExtension{0x0012, nil}, helloExtension{0x0033, list(2)}, helloExtension{0x002d, []byte{1, 1}},
		helloExtension{extSupportedVersions, []byte{6, 0x3a, 0x3a, 3, 4, 3, 3}}, helloExtension{0x001b, []byte{2, 0, 2}},
		helloExtension{0x4469, list(2)}, helloExtension{0x0015, []byte{0, 0}}, helloExtension{0x4a4a, []byte{0}})
	for _, tc := range []struct {
		name     string
		record   []byte
		ja3, ja4 string
	}{
		{name: "JA3 README", record: ja3, ja3: "ada70206e40642a3e4461f35503241d5"},
		{name: "JA4 README", record: chrome, ja4: "t13d1516h2_8daaf6152771_e5627efa2ab1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseClientHello(tc.record)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.JA3(); tc.ja3 != "" && got != tc.ja3 {
				t.Errorf("JA3 %s, want %s", got, tc.ja3)
			}
			if got := h.JA4(); tc.ja4 != "" && got != tc.ja4 {
				t.Errorf("JA4 %s, want %s", got, tc.ja4)
			}
		})
	}
}

// A ClientHello split over two records, as a large one is, is read whole;
// one cut short, or bytes that are not a handshake, are refused.
func TestParseClientHello(t *testing.T) {
	rec := hello(0x0303, []uint16{0x1301}, helloExtension{extServerName, []byte{0, 4, 0, 0, 1, 'a'}})
	msg := rec[5:]
	split := append(append([]byte{0x16, 3, 1, 0, 10}, msg[:10]...), append([]byte{0x16, 3, 1, 0, byte(len(msg) - 10)}, msg[10:]...)...)
	whole, err := parseClientHello(rec)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := parseClientHello(split)
	if err != nil {
		t.Fatal(err)
	}
	if whole.JA4() != parts.JA4() || whole.JA3() != parts.JA3() {
		t.Errorf("split %s %s, whole %s %s", parts.JA3(), parts.JA4(), whole.JA3(), whole.JA4())
	}
	for name, b := range map[string][]byte{"cut": rec[:len(rec)-3], "not a handshake": append([]byte{0x17}, rec[1:]...), "empty": nil} {
		if _, err := parseClientHello(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func FuzzParseClientHello(f *testing.F) {
	f.Add(hello(0x0303, []uint16{0x1301}, helloExtension{extALPN, []byte{0, 3, 2, 'h', '2'}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := parseClientHello(b); err == nil {
			_, _ = h.JA3(), h.JA4()
		}
	})
}
