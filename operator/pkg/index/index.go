// Package index keeps the operator's cache indexes: which Gateways are of
// a class, and which classes and Gateways name a ContourDeployment. An
// event then maps to the objects it concerns through an index lookup
// instead of a copy of every Gateway or class in the cluster.
package index

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/profile"
)

// The indexed fields.
const (
	// gatewayClass indexes Gateways by spec.gatewayClassName.
	gatewayClass = "isobar.dev/gatewayClassName"
	// classProfile indexes GatewayClasses by the ContourDeployment their
	// parametersRef names ("namespace/name"), as profile.ClassRef reads it.
	classProfile = "isobar.dev/classProfile"
	// gatewayProfile indexes Gateways by the ContourDeployment their own
	// parametersRef names, as profile.GatewayRef reads it.
	gatewayProfile = "isobar.dev/gatewayProfile"
)

// Setup registers the indexes with a manager's field indexer, once.
func Setup(ctx context.Context, fi client.FieldIndexer) error {
	for _, ix := range []struct {
		obj   client.Object
		field string
		of    client.IndexerFunc
	}{
		{&gatewayv1.Gateway{}, gatewayClass, func(o client.Object) []string {
			return []string{string(o.(*gatewayv1.Gateway).Spec.GatewayClassName)}
		}},
		{&gatewayv1.GatewayClass{}, classProfile, func(o client.Object) []string {
			if ref, ok := profile.ClassRef(o.(*gatewayv1.GatewayClass)); ok {
				return []string{ref.String()}
			}
			return nil
		}},
		{&gatewayv1.Gateway{}, gatewayProfile, func(o client.Object) []string {
			if ref, own := profile.GatewayRef(o.(*gatewayv1.Gateway)); own {
				return []string{ref.String()}
			}
			return nil
		}},
	} {
		if err := fi.IndexField(ctx, ix.obj, ix.field, ix.of); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return nil
}

// GatewaysOfClass returns the Gateways of a class.
func GatewaysOfClass(ctx context.Context, c client.Reader, class string) ([]gatewayv1.Gateway, error) {
	var list gatewayv1.GatewayList
	if err := c.List(ctx, &list, client.MatchingFields{gatewayClass: class}); err != nil {
		return nil, fmt.Errorf("listing the Gateways of class %s: %w", class, err)
	}
	return list.Items, nil
}

// ClassesOfProfile returns the GatewayClasses whose parametersRef names
// the ContourDeployment cd, of any controller.
func ClassesOfProfile(ctx context.Context, c client.Reader, cd types.NamespacedName) ([]gatewayv1.GatewayClass, error) {
	var list gatewayv1.GatewayClassList
	if err := c.List(ctx, &list, client.MatchingFields{classProfile: cd.String()}); err != nil {
		return nil, fmt.Errorf("listing the GatewayClasses of ContourDeployment %s: %w", cd, err)
	}
	return list.Items, nil
}

// GatewaysOfProfile returns the Gateways rendered from the ContourDeployment
// cd: those whose own parametersRef names it, and those of classes (by
// name) that do. Each Gateway is returned once.
func GatewaysOfProfile(ctx context.Context, c client.Reader, cd types.NamespacedName, classes []string) ([]gatewayv1.Gateway, error) {
	var own gatewayv1.GatewayList
	if err := c.List(ctx, &own, client.MatchingFields{gatewayProfile: cd.String()}); err != nil {
		return nil, fmt.Errorf("listing the Gateways of ContourDeployment %s: %w", cd, err)
	}
	seen := map[types.NamespacedName]bool{}
	var out []gatewayv1.Gateway
	add := func(gws []gatewayv1.Gateway) {
		for _, gw := range gws {
			if k := client.ObjectKeyFromObject(&gw); !seen[k] {
				seen[k] = true
				out = append(out, gw)
			}
		}
	}
	add(own.Items)
	for _, class := range classes {
		gws, err := GatewaysOfClass(ctx, c, class)
		if err != nil {
			return nil, err
		}
		add(gws)
	}
	return out, nil
}
