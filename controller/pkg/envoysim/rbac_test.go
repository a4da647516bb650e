package envoysim

import (
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The trusted client address follows Envoy's x-forwarded-for rules with
// use_remote_address: the peer, or with N trusted hops the Nth address
// from the right of the X-Forwarded-For the request came with.
func TestClientAddresses(t *testing.T) {
	for _, tc := range []struct {
		hops         uint32
		peer, xff    string
		remote       string
		wantErr      bool
		noRemoteAddr bool
	}{
		{hops: 0, peer: "10.0.0.1", xff: "203.0.113.9", remote: "10.0.0.1"},
		{hops: 1, peer: "10.0.0.1", xff: "203.0.113.9", remote: "203.0.113.9"},
		{hops: 1, peer: "10.0.0.1", xff: "198.51.100.1, 203.0.113.9", remote: "203.0.113.9"},
		{hops: 2, peer: "10.0.0.1", xff: "198.51.100.1, 203.0.113.9", remote: "198.51.100.1"},
		{hops: 2, peer: "10.0.0.1", xff: "203.0.113.9", remote: "10.0.0.1"},
		{hops: 1, peer: "10.0.0.1", xff: "not-an-address", remote: "10.0.0.1"},
		{hops: 0, peer: "::ffff:10.0.0.1", remote: "10.0.0.1"},
		{hops: 0, peer: "", wantErr: true},
		{hops: 0, peer: "10.0.0.1", remote: "10.0.0.1", noRemoteAddr: true, wantErr: true},
	} {
		hcm := &hcmv3.HttpConnectionManager{UseRemoteAddress: wrapperspb.Bool(!tc.noRemoteAddr), XffNumTrustedHops: tc.hops}
		var headers []Header
		if tc.xff != "" {
			headers = []Header{{Name: "x-forwarded-for", Value: tc.xff}}
		}
		c := clientAddressesOf(hcm, Request{ClientAddress: tc.peer}, headers)
		if (c.err != nil) != tc.wantErr {
			t.Errorf("%d hops, peer %q, XFF %q: error %v, want one: %t", tc.hops, tc.peer, tc.xff, c.err, tc.wantErr)
			continue
		}
		if !tc.wantErr && c.remote.String() != tc.remote {
			t.Errorf("%d hops, peer %q, XFF %q: remote %s, want %s", tc.hops, tc.peer, tc.xff, c.remote, tc.remote)
		}
	}
}
