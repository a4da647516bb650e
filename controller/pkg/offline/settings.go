package offline

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/profile"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/xds"
)

// settings are the Envoy settings of the Gateway named "namespace/name":
// its profile's runtimeSettings, resolved as the operator resolves them.
// Input is often partial, so a profile that is not in it, or that the
// operator would refuse, gives the defaults and a note saying so.
func settings(res *resources.Resources, gateway string) (xds.Settings, string) {
	var missing []string
	lookup := func(key types.NamespacedName) (*v1alpha1.ContourDeployment, error) {
		for _, cd := range res.ContourDeployments {
			if cd.Namespace == key.Namespace && cd.Name == key.Name {
				return cd, nil
			}
		}
		missing = append(missing, key.String())
		return &v1alpha1.ContourDeployment{}, nil
	}
	for _, gw := range res.Gateways {
		if gw.Namespace+"/"+gw.Name != gateway {
			continue
		}
		p := &profile.Profile{}
		for _, gc := range res.GatewayClasses {
			if gc.Name != string(gw.Spec.GatewayClassName) {
				continue
			}
			var err error
			if p, err = profile.ForClass(gc, lookup); err != nil {
				return xds.DefaultSettings(), fmt.Sprintf("GatewayClass %s: %v; using the default runtimeSettings", gc.Name, err)
			}
		}
		p, err := profile.ForGateway(gw, p, lookup)
		if err != nil {
			return xds.DefaultSettings(), fmt.Sprintf("%v; using the default runtimeSettings", err)
		}
		s, err := xds.FromRuntime(p.Spec.RuntimeSettings)
		if err != nil {
			return xds.DefaultSettings(), fmt.Sprintf("ContourDeployment %s: %v; the operator refuses this profile; using the default runtimeSettings", p.Sources, err)
		}
		if len(missing) > 0 {
			return s, fmt.Sprintf("ContourDeployment %s not in the input; its runtimeSettings are taken as the defaults", strings.Join(missing, " and "))
		}
		return s, ""
	}
	return xds.DefaultSettings(), ""
}
