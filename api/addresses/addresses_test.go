package addresses

import (
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestOf(t *testing.T) {
	ip, host := gatewayv1.IPAddressType, gatewayv1.HostnameAddressType
	for _, tc := range []struct {
		addrs       []gatewayv1.GatewaySpecAddress
		usable      []string
		unusable    int
		unsupported bool
	}{
		{[]gatewayv1.GatewaySpecAddress{{Type: &ip, Value: "192.0.2.1"}, {Value: "2001:db8::1"}, {Type: &ip}}, []string{"192.0.2.1", "2001:db8::1", ""}, 0, false},
		{[]gatewayv1.GatewaySpecAddress{{Value: "127.0.0.2"}, {Value: "169.254.1.1"}, {Value: "224.0.0.1"}, {Value: "0.0.0.0"}, {Value: "fe80::1"}, {Value: "nope"}}, nil, 6, false},
		{[]gatewayv1.GatewaySpecAddress{{Value: "192.0.2.1"}, {Type: &host, Value: "lb.example.com"}}, nil, 0, true},
	} {
		gw := &gatewayv1.Gateway{Spec: gatewayv1.GatewaySpec{Addresses: tc.addrs}}
		rs, u := Of(gw)
		if (u != nil) != tc.unsupported {
			t.Errorf("%v: unsupported %v", tc.addrs, u)
			continue
		}
		var usable []string
		unusable := 0
		for _, r := range rs {
			if r.Unusable != "" {
				unusable++
			} else {
				usable = append(usable, r.IP)
			}
		}
		if len(usable) != len(tc.usable) || unusable != tc.unusable {
			t.Errorf("%v: usable %v, %d unusable; want %v, %d", tc.addrs, usable, unusable, tc.usable, tc.unusable)
		}
	}
}
