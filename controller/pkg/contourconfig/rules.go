package contourconfig

import (
	"fmt"
	"slices"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/timeout"
)

// Rule says where one of Contour's settings goes. Exactly one of Profile
// (with carry), Operator and NotCarried is set.
type Rule struct {
	// Path is the setting in Contour's ContourConfiguration spec (or, with
	// "contour." and "envoy.", its ContourDeployment's deployment
	// settings), as JSON field names joined by dots; it covers the fields
	// under it.
	Path string
	// Profile is the field of the Isobar profile (ContourDeployment spec)
	// that carries it.
	Profile string
	// Operator is what of Isobar does the setting's job itself.
	Operator string
	// NotCarried is why the setting has no home in the profile.
	NotCarried string

	carry func(in *input, out *v1alpha1.ContourDeploymentSpec) error
}

// input is one Contour configuration: its ContourConfiguration spec and,
// from a ContourDeployment, its deployment settings.
type input struct {
	config     *contourv1alpha1.ContourConfigurationSpec
	deployment *contourv1alpha1.ContourDeploymentSpec
	// newer are the newer settings it sets (newerSettings), their values
	// as JSON.
	newer map[string]string
}

const (
	perGateway     = "the operator gives each Gateway its own fleet and Services, with ports from the Gateway's listeners"
	xdsOperator    = "the operator serves each fleet's xDS from its own controller over mTLS, with certificates it issues"
	probesOperator = "the operator sets the controller's and Envoy's health probes and metrics ports"
)

// Rules are every setting of Contour's configuration, in the order of its
// documentation: the ContourConfiguration's, then a ContourDeployment's
// deployment settings.
var Rules = slices.Concat(configurationRules, deploymentRules)

// contourJSONFields are the access log fields Contour's jsonFields know
// by name alone (Contour's config.JSONFields defaults).
var contourJSONFields = map[string]string{
	"@timestamp": "%START_TIME%", "ts": "%START_TIME%", "authority": "%REQ(:AUTHORITY)%", "method": "%REQ(:METHOD)%",
	"path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%", "protocol": "%PROTOCOL%", "response_code": "%RESPONSE_CODE%",
	"response_flags": "%RESPONSE_FLAGS%", "bytes_received": "%BYTES_RECEIVED%", "bytes_sent": "%BYTES_SENT%",
	"duration": "%DURATION%", "upstream_service_time": "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
	"x_forwarded_for": "%REQ(X-FORWARDED-FOR)%", "user_agent": "%REQ(USER-AGENT)%", "request_id": "%REQ(X-REQUEST-ID)%",
	"upstream_host": "%UPSTREAM_HOST%", "upstream_cluster": "%UPSTREAM_CLUSTER%", "downstream_remote_address": "%DOWNSTREAM_REMOTE_ADDRESS%",
	"downstream_local_address": "%DOWNSTREAM_LOCAL_ADDRESS%", "upstream_local_address": "%UPSTREAM_LOCAL_ADDRESS%",
	"route_name": "%ROUTE_NAME%", "requested_server_name": "%REQUESTED_SERVER_NAME%",
}

func httpProxy(out *v1alpha1.ContourDeploymentSpec) *v1alpha1.HTTPProxySettings {
	if out.RuntimeSettings.HTTPProxy == nil {
		out.RuntimeSettings.HTTPProxy = &v1alpha1.HTTPProxySettings{}
	}
	return out.RuntimeSettings.HTTPProxy
}

func nodePlacement(p *contourv1alpha1.NodePlacement) *v1alpha1.NodePlacement {
	out := &v1alpha1.NodePlacement{Tolerations: p.Tolerations}
	for k, v := range p.NodeSelector {
		if out.NodeSelector == nil {
			out.NodeSelector = map[string]v1alpha1.LabelValue{}
		}
		out.NodeSelector[k] = v1alpha1.LabelValue(v)
	}
	return out
}

func int32Of(path string, n uint32) (*int32, error) {
	if n > 1<<31-1 {
		return nil, fmt.Errorf("%s %d is too large", path, n)
	}
	return ptr.To(int32(n)), nil
}

// tlsVersion is Contour's "1.2" or "1.3".
func tlsVersion(path, v string) (string, error) {
	if v != "1.2" && v != "1.3" {
		return "", fmt.Errorf("%s %q is not 1.2 or 1.3", path, v)
	}
	return v, nil
}

// durationRule carries one of Contour's timeouts: a duration, or
// "infinity" (and "infinite"), which the profile can express only where
// leaving the field unset means no limit (unlimited).
func durationRule(path string, get func(*input) *string, set func(*v1alpha1.TimeoutSettings) **metav1.Duration, unlimited bool) func(*input, *v1alpha1.ContourDeploymentSpec) error {
	return func(in *input, out *v1alpha1.ContourDeploymentSpec) error {
		v := *get(in)
		d, err := timeout.Parse(v)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		switch {
		case d < 0 && !unlimited:
			return notCarried("the profile cannot turn this timeout off; Envoy's default applies")
		case d < 0:
			return nil
		}
		*set(&out.RuntimeSettings.Timeouts) = &metav1.Duration{Duration: d}
		return nil
	}
}

// notCarried is a value a carried setting has that the profile cannot
// take, though it is valid: a Note, not an error.
type notCarried string

func (n notCarried) Error() string { return string(n) }

func listenerOf(out *v1alpha1.ContourDeploymentSpec) *v1alpha1.ListenerSettings {
	if out.RuntimeSettings.Listener == nil {
		out.RuntimeSettings.Listener = &v1alpha1.ListenerSettings{}
	}
	return out.RuntimeSettings.Listener
}

func clusterOf(out *v1alpha1.ContourDeploymentSpec) *v1alpha1.ClusterSettings {
	if out.RuntimeSettings.Cluster == nil {
		out.RuntimeSettings.Cluster = &v1alpha1.ClusterSettings{}
	}
	return out.RuntimeSettings.Cluster
}

func ingressOf(out *v1alpha1.ContourDeploymentSpec) *v1alpha1.IngressSettings {
	if out.RuntimeSettings.Ingress == nil {
		out.RuntimeSettings.Ingress = &v1alpha1.IngressSettings{}
	}
	return out.RuntimeSettings.Ingress
}
