package render

import (
	"strings"
	"testing"

	"isobar.dev/api/release"
	"isobar.dev/api/v1alpha1"
)

func TestCheckImages(t *testing.T) {
	for _, tc := range []struct {
		name, envoy, controller string
		want                    string // "" for accepted
	}{
		{name: "defaults"},
		{name: "the default Envoy", envoy: DefaultEnvoyImage},
		{name: "a newer Envoy", envoy: "envoyproxy/envoy:v1.41.0"},
		{name: "the oldest Envoy supported", envoy: "envoyproxy/envoy:v1.37.0"},
		{name: "an older Envoy", envoy: "envoyproxy/envoy:v1.36.4", want: "is Envoy v1.36.4, older than the oldest Envoy Isobar supports, v1.37"},
		{name: "an Envoy by digest", envoy: "envoyproxy/envoy@sha256:0123"},
		{name: "the operator's controller", controller: DefaultControllerImage},
		{name: "its release elsewhere", controller: "registry.example.com/isobar/isobar-controller:" + release.Version},
		{name: "another release's controller", controller: "ghcr.io/isobar-dev/isobar-controller:v9.9.9", want: "the operator and the controller must be of one release"},
		{name: "a build's own tag", controller: "isobar-controller:e2e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec v1alpha1.ContourDeploymentSpec
			spec.Envoy.Image, spec.Controller.Image = tc.envoy, tc.controller
			err := checkImages(spec)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
