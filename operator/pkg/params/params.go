// Package params resolves the ContourDeployment profile a Gateway's fleet
// is rendered from: its class's parametersRef, with the Gateway's own
// spec.infrastructure.parametersRef merged over it.
package params

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
)

// Invalid is a parametersRef a person must fix; its message says how. Other
// errors are the API server's and worth a retry.
type Invalid struct{ msg string }

func (e *Invalid) Error() string { return e.msg }

func invalidf(format string, args ...any) error { return &Invalid{fmt.Sprintf(format, args...)} }

// Invalidf is an Invalid with a formatted message.
func Invalidf(format string, args ...any) error { return invalidf(format, args...) }

// IsInvalid reports whether err is an Invalid.
func IsInvalid(err error) bool {
	var i *Invalid
	return errors.As(err, &i)
}

// Profile is a resolved profile and where it came from.
type Profile struct {
	Spec v1alpha1.ContourDeploymentSpec
	// Sources are the ContourDeployments used, class's first.
	Sources []types.NamespacedName
}

// ForClass resolves a GatewayClass's parametersRef; a class without one
// gets the default profile.
func ForClass(ctx context.Context, c client.Reader, gc *gatewayv1.GatewayClass) (*Profile, error) {
	ref := gc.Spec.ParametersRef
	if ref == nil {
		return &Profile{}, nil
	}
	if string(ref.Group) != v1alpha1.GroupVersion.Group || string(ref.Kind) != "ContourDeployment" {
		return nil, invalidf("parametersRef must be a %s ContourDeployment, not %s %s", v1alpha1.GroupVersion.Group, kindOf(string(ref.Group), string(ref.Kind)), ref.Name)
	}
	if ref.Namespace == nil || *ref.Namespace == "" {
		return nil, invalidf("parametersRef to ContourDeployment %s needs a namespace: ContourDeployments are namespaced", ref.Name)
	}
	key := types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}
	cd, err := get(ctx, c, key)
	if err != nil {
		return nil, err
	}
	return &Profile{Spec: cd.Spec, Sources: []types.NamespacedName{key}}, nil
}

// ForGateway merges the Gateway's own parametersRef, a ContourDeployment
// in its namespace, over the class's profile (a JSON merge patch: maps
// merge, everything else the Gateway's profile sets wins).
func ForGateway(ctx context.Context, c client.Reader, gw *gatewayv1.Gateway, class *Profile) (*Profile, error) {
	if gw.Spec.Infrastructure == nil || gw.Spec.Infrastructure.ParametersRef == nil {
		return class, nil
	}
	ref := gw.Spec.Infrastructure.ParametersRef
	if string(ref.Group) != v1alpha1.GroupVersion.Group || string(ref.Kind) != "ContourDeployment" {
		return nil, invalidf("spec.infrastructure.parametersRef must be a %s ContourDeployment, not %s %s", v1alpha1.GroupVersion.Group, kindOf(string(ref.Group), string(ref.Kind)), ref.Name)
	}
	key := types.NamespacedName{Namespace: gw.Namespace, Name: ref.Name}
	cd, err := get(ctx, c, key)
	if err != nil {
		return nil, err
	}
	base, err := json.Marshal(class.Spec)
	if err != nil {
		return nil, err
	}
	patch, err := json.Marshal(cd.Spec)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(base, patch)
	if err != nil {
		return nil, fmt.Errorf("merging profiles: %w", err)
	}
	out := &Profile{Sources: append(append([]types.NamespacedName(nil), class.Sources...), key)}
	if err := json.Unmarshal(merged, &out.Spec); err != nil {
		return nil, fmt.Errorf("merging profiles: %w", err)
	}
	return out, nil
}

func get(ctx context.Context, c client.Reader, key types.NamespacedName) (*v1alpha1.ContourDeployment, error) {
	cd := &v1alpha1.ContourDeployment{}
	err := c.Get(ctx, key, cd)
	if apierrors.IsNotFound(err) {
		return nil, invalidf("ContourDeployment %s does not exist", key)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ContourDeployment %s: %w", key, err)
	}
	return cd, nil
}

func kindOf(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}
