package imagetag

import "testing"

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  Version
		ok    bool
	}{
		{"docker.io/envoyproxy/envoy:distroless-v1.40.0", Version{1, 40, 0}, true},
		{"envoyproxy/envoy:v1.33.12", Version{1, 33, 12}, true},
		{"registry.example.com:5000/envoy:1.36.2", Version{1, 36, 2}, true},
		{"ghcr.io/isobar-dev/isobar-controller:v0.1.0@sha256:0123", Version{0, 1, 0}, true},
		{"registry.example.com:5000/envoy", Version{}, false},
		{"envoyproxy/envoy@sha256:0123", Version{}, false},
		{"envoyproxy/envoy:latest", Version{}, false},
		{"envoyproxy/envoy:v1.40", Version{}, false},
		{"envoyproxy/envoy:v1.40.0-dev", Version{}, false},
		{"envoyproxy/envoy:v1.040.0", Version{}, false},
		{"isobar-controller:e2e", Version{}, false},
	} {
		got, ok := Of(tc.image)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Of(%q) = %v, %t; want %v, %t", tc.image, got, ok, tc.want, tc.ok)
		}
	}
	if !(Version{1, 39, 9}).Less(Version{1, 40, 0}) || (Version{1, 40, 0}).Less(Version{1, 40, 0}) || (Version{2, 0, 0}).Less(Version{1, 99, 0}) {
		t.Error("Less orders releases wrongly")
	}
}
