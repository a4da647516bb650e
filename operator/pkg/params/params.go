// Package params reads the ContourDeployments a profile resolution asks for
// from the API server; package isobar.dev/api/profile resolves them.
package params

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/api/v1alpha1"
)

// Lookup finds ContourDeployments through c.
func Lookup(ctx context.Context, c client.Reader) func(types.NamespacedName) (*v1alpha1.ContourDeployment, error) {
	return func(key types.NamespacedName) (*v1alpha1.ContourDeployment, error) {
		cd := &v1alpha1.ContourDeployment{}
		err := c.Get(ctx, key, cd)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return cd, nil
	}
}
