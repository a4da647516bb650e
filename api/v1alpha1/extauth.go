package v1alpha1

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GlobalExtAuthSettings are Contour's globalExtAuth: Envoy asks one
// authorization server, over Envoy's gRPC authorization protocol, about
// every request of every HTTP route of the Gateway (HTTPRoutes,
// GRPCRoutes, Ingresses and HTTPProxies, on plain and TLS listeners)
// before it acts on it. An HTTPProxy opts out, or sets the check's
// context, with its virtualhost's or route's authPolicy, and a TLS root
// with an extensionRef of its own is checked by its server instead; an
// HTTPRoute rule with an ExternalAuth filter is checked by that filter's
// server instead. Gateway API routes and Ingresses have no way to opt
// out.
type GlobalExtAuthSettings struct {
	// ExtensionService is the ExtensionService (projectcontour.io/v1alpha1)
	// of the authorization server. The profile names it across
	// namespaces without a ReferenceGrant: the platform team that owns
	// the profile chose it.
	ExtensionService ObjectReference `json:"extensionService"`

	// AuthPolicy is the default policy of every route: whether it is
	// checked, and the context (key/value pairs) its checks carry. An
	// HTTPProxy's virtualhost.authorization and a route's authPolicy
	// override it, as in Contour.
	// +optional
	AuthPolicy *GlobalAuthPolicy `json:"authPolicy,omitempty"`

	// ResponseTimeout is how long Envoy waits for the server's answer;
	// the ExtensionService's timeoutPolicy.response, or 10s, when unset.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="responseTimeout must be positive"
	// +optional
	ResponseTimeout *metav1.Duration `json:"responseTimeout,omitempty"`

	// FailOpen lets a request through when the server cannot be asked or
	// does not answer in time, instead of answering 403. Contour's advice
	// holds: set it only while moving authorization out of applications.
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`

	// WithRequestBody makes each check carry the request's body.
	// +optional
	WithRequestBody *AuthRequestBody `json:"withRequestBody,omitempty"`
}

// GlobalAuthPolicy is whether routes are checked, and what their checks
// carry, unless an HTTPProxy says otherwise.
type GlobalAuthPolicy struct {
	// Disabled leaves routes unchecked unless an HTTPProxy enables the
	// check on its virtual host or route. Gateway API routes and
	// Ingresses are then never checked by the global server.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Context are the key/value pairs every check carries (gRPC's
	// context_extensions), unless an HTTPProxy gives its own.
	// +kubebuilder:validation:MaxProperties=32
	// Keys and values are text without control characters (checked when
	// the profile is read).
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(k) <= 256 && size(self[k]) <= 4096)",message="context keys must be 1 to 256 characters and values at most 4096"
	// +optional
	Context map[string]string `json:"context,omitempty"`
}

// AuthRequestBody is how much of a request's body a check carries.
type AuthRequestBody struct {
	// MaxRequestBytes is how much of the body Envoy holds and sends.
	// +kubebuilder:default=1024
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequestBytes uint32 `json:"maxRequestBytes,omitempty"`

	// AllowPartialMessage sends the first maxRequestBytes of a longer
	// body; without it, a longer body is refused (413).
	// +optional
	AllowPartialMessage bool `json:"allowPartialMessage,omitempty"`

	// PackAsBytes sends the body as raw bytes rather than a UTF-8 string.
	// +optional
	PackAsBytes bool `json:"packAsBytes,omitempty"`
}

// Validate refuses global authorization settings the CRD's schema lets
// through in part or not at all, as when a profile is read from a file.
func (s *GlobalExtAuthSettings) Validate() error {
	if s.ExtensionService.Namespace == "" || s.ExtensionService.Name == "" {
		return fmt.Errorf("runtimeSettings.globalExtAuth.extensionService needs a namespace and a name")
	}
	if s.ResponseTimeout != nil && s.ResponseTimeout.Duration <= 0 {
		return fmt.Errorf("runtimeSettings.globalExtAuth.responseTimeout %s is not positive", s.ResponseTimeout.Duration)
	}
	if p := s.AuthPolicy; p != nil {
		// In key order, so that the error names the same key each time.
		for _, k := range slices.Sorted(maps.Keys(p.Context)) {
			if k == "" || !isText(k, 256) || !isText(p.Context[k], 4096) {
				return fmt.Errorf("runtimeSettings.globalExtAuth.authPolicy.context[%q] is not a key of at most 256 bytes and a value of at most 4096, without control characters", k)
			}
		}
	}
	return nil
}
