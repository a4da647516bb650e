package gatewayapi

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"isobar.dev/controller/pkg/ir"
)

// Envoy refuses a cluster with an endpoint that is not an IP or a port
// outside 1-65535. The API server admits neither in an IPv4 or IPv6
// slice, but `translate` reads files: such endpoints are left out, never
// passed on (found by FuzzLoadAndTranslate).
func TestEndpointsLeaveOutWhatEnvoyRefuses(t *testing.T) {
	slice := func(name string, port int32, addresses ...string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: addresses}},
		}
	}
	src := ir.ClusterSource{Namespace: "ns", Service: "svc", PortName: "http", Protocol: string(corev1.ProtocolTCP)}
	got := Endpoints(src, []*discoveryv1.EndpointSlice{
		slice("a", 8080, "", "10.0.0.1", "not-an-ip", "fd00::1"),
		slice("b", 70000, "10.0.0.2"),
		slice("c", 0, "10.0.0.3"),
	})
	want := []ir.Endpoint{{Address: "10.0.0.1", Port: 8080}, {Address: "fd00::1", Port: 8080}}
	if !slices.Equal(got, want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
}
