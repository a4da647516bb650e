package contourconfig

import (
	"fmt"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/timeout"
)

// globalExtAuth carries Contour's globalExtAuth. Contour's responseTimeout
// may be "infinity"; Envoy must give up on a check at some point, so the
// converter refuses it, as Isobar refuses it on an HTTPProxy.
func globalExtAuth(in *input, out *v1alpha1.ContourDeploymentSpec) error {
	a := in.config.GlobalExternalAuthorization
	ref := a.ExtensionServiceRef
	if ref.Namespace == "" || ref.Name == "" {
		return fmt.Errorf("globalExtAuth.extensionRef needs a namespace and a name")
	}
	if v := ref.APIVersion; v != "" && v != contourv1alpha1.GroupVersion.String() {
		return fmt.Errorf("globalExtAuth.extensionRef.apiVersion %q is not %s", v, contourv1alpha1.GroupVersion)
	}
	s := &v1alpha1.GlobalExtAuthSettings{
		ExtensionService: v1alpha1.ObjectReference{Namespace: ref.Namespace, Name: ref.Name},
		FailOpen:         a.FailOpen,
	}
	if v := a.ResponseTimeout; v != "" {
		d, err := timeout.Parse(v)
		switch {
		case err != nil:
			return fmt.Errorf("globalExtAuth.responseTimeout: %w", err)
		case d <= 0:
			return fmt.Errorf("globalExtAuth.responseTimeout %q: a check needs a timeout", v)
		}
		s.ResponseTimeout = &metav1.Duration{Duration: d}
	}
	if p := a.AuthPolicy; p != nil {
		s.AuthPolicy = &v1alpha1.GlobalAuthPolicy{Disabled: p.Disabled, Context: p.Context}
	}
	if b := a.WithRequestBody; b != nil {
		s.WithRequestBody = &v1alpha1.AuthRequestBody{MaxRequestBytes: b.MaxRequestBytes, AllowPartialMessage: b.AllowPartialMessage, PackAsBytes: b.PackAsBytes}
	}
	if err := s.Validate(); err != nil {
		return err
	}
	out.RuntimeSettings.GlobalExtAuth = s
	return nil
}
