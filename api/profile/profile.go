// Package profile resolves the ContourDeployment profile a Gateway's fleet
// is rendered from: its class's parametersRef, with the Gateway's own
// spec.infrastructure.parametersRef merged over it. The operator renders
// fleets from it and `isobar-controller translate` applies its
// runtimeSettings, so both read one resolution.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
)

// Invalid is a parametersRef a person must fix; its message says how. Other
// errors are the lookup's (an API server's) and worth a retry.
type Invalid struct{ msg string }

func (e *Invalid) Error() string { return e.msg }

// Invalidf is an Invalid with a formatted message.
func Invalidf(format string, args ...any) error { return &Invalid{fmt.Sprintf(format, args...)} }

// IsInvalid reports whether err is an Invalid.
func IsInvalid(err error) bool {
	var i *Invalid
	return errors.As(err, &i)
}

// Lookup finds a ContourDeployment: nil and no error when there is none.
type Lookup func(types.NamespacedName) (*v1alpha1.ContourDeployment, error)

// Profile is a resolved profile and where it came from.
type Profile struct {
	Spec v1alpha1.ContourDeploymentSpec
	// Sources are the ContourDeployments used, class's first.
	Sources []types.NamespacedName
}

// IsRef reports whether a group and kind name a ContourDeployment.
func IsRef(group, kind string) bool {
	return group == v1alpha1.GroupVersion.Group && kind == "ContourDeployment"
}

// ClassRef returns the ContourDeployment a GatewayClass's parametersRef
// names, and false when it names none (no ref, another kind, or no
// namespace, which ForClass reports). Every reader of a class's profile
// matches through it, so that none is more lenient than the resolution.
func ClassRef(gc *gatewayv1.GatewayClass) (types.NamespacedName, bool) {
	ref := gc.Spec.ParametersRef
	if ref == nil || !IsRef(string(ref.Group), string(ref.Kind)) || ref.Namespace == nil || *ref.Namespace == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}, true
}

// GatewayRef returns the ContourDeployment a Gateway's own
// spec.infrastructure.parametersRef names: always in the Gateway's
// namespace.
func GatewayRef(gw *gatewayv1.Gateway) (types.NamespacedName, bool) {
	inf := gw.Spec.Infrastructure
	if inf == nil || inf.ParametersRef == nil || !IsRef(string(inf.ParametersRef.Group), string(inf.ParametersRef.Kind)) {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: gw.Namespace, Name: inf.ParametersRef.Name}, true
}

// ForClass resolves a GatewayClass's parametersRef; a class without one
// gets the default profile.
func ForClass(gc *gatewayv1.GatewayClass, get Lookup) (*Profile, error) {
	ref := gc.Spec.ParametersRef
	if ref == nil {
		return &Profile{}, nil
	}
	if !IsRef(string(ref.Group), string(ref.Kind)) {
		return nil, Invalidf("parametersRef must be a %s ContourDeployment, not %s %s", v1alpha1.GroupVersion.Group, kindOf(string(ref.Group), string(ref.Kind)), ref.Name)
	}
	key, ok := ClassRef(gc)
	if !ok {
		return nil, Invalidf("parametersRef to ContourDeployment %s needs a namespace: ContourDeployments are namespaced", ref.Name)
	}
	cd, err := find(get, key)
	if err != nil {
		return nil, err
	}
	return &Profile{Spec: cd.Spec, Sources: []types.NamespacedName{key}}, nil
}

// ForGateway merges the Gateway's own parametersRef, a ContourDeployment
// in its namespace, over the class's profile (a JSON merge patch: maps
// merge, everything else the Gateway's profile sets wins).
func ForGateway(gw *gatewayv1.Gateway, class *Profile, get Lookup) (*Profile, error) {
	if gw.Spec.Infrastructure == nil || gw.Spec.Infrastructure.ParametersRef == nil {
		return class, nil
	}
	ref := gw.Spec.Infrastructure.ParametersRef
	if !IsRef(string(ref.Group), string(ref.Kind)) {
		return nil, Invalidf("spec.infrastructure.parametersRef must be a %s ContourDeployment, not %s %s", v1alpha1.GroupVersion.Group, kindOf(string(ref.Group), string(ref.Kind)), ref.Name)
	}
	key, _ := GatewayRef(gw)
	cd, err := find(get, key)
	if err != nil {
		return nil, err
	}
	spec, err := Merge(class.Spec, cd.Spec)
	if err != nil {
		return nil, err
	}
	return &Profile{Spec: spec, Sources: append(append([]types.NamespacedName(nil), class.Sources...), key)}, nil
}

// Merge applies over to base as a JSON merge patch.
func Merge(base, over v1alpha1.ContourDeploymentSpec) (v1alpha1.ContourDeploymentSpec, error) {
	var out v1alpha1.ContourDeploymentSpec
	b, err := json.Marshal(base)
	if err != nil {
		return out, err
	}
	patch, err := json.Marshal(over)
	if err != nil {
		return out, err
	}
	merged, err := jsonpatch.MergePatch(b, patch)
	if err != nil {
		return out, fmt.Errorf("merging profiles: %w", err)
	}
	if err := json.Unmarshal(merged, &out); err != nil {
		return out, fmt.Errorf("merging profiles: %w", err)
	}
	return out, nil
}

func find(get Lookup, key types.NamespacedName) (*v1alpha1.ContourDeployment, error) {
	cd, err := get(key)
	if err != nil {
		return nil, fmt.Errorf("reading ContourDeployment %s: %w", key, err)
	}
	if cd == nil {
		return nil, Invalidf("ContourDeployment %s does not exist", key)
	}
	return cd, nil
}

func kindOf(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}
