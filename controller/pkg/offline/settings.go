package offline

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/profile"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// settings are the Envoy settings of the Gateway named "namespace/name":
// its profile's runtimeSettings, resolved as the operator resolves them.
// Input is often partial, so a profile that is not in it, or that the
// operator would refuse, gives the defaults and a note saying so.
func settings(res *resources.Resources, gateway string) (xds.Settings, string) {
	rs, sources, note, ok := runtimeSettings(res, gateway)
	if !ok {
		return xds.DefaultSettings(), note
	}
	s, err := xds.FromRuntime(rs)
	if err != nil {
		return xds.DefaultSettings(), fmt.Sprintf("ContourDeployment %s: %v; the operator refuses this profile; using the default runtimeSettings", sources, err)
	}
	return s, note
}

// profileOptions are the translation options the Gateways' profiles in
// res() give, read at each translation, as the live controller takes
// them from its profile: a profile that cannot be resolved, or that the
// controller would refuse, gives the defaults.
func profileOptions(res func() *resources.Resources) translate.Options {
	return translate.Options{Profile: func(gw types.NamespacedName) *v1alpha1.RuntimeSettings { return validRuntimeSettings(res(), gw) }}
}

// validRuntimeSettings are the runtimeSettings of a Gateway's profile
// when they resolve and the live controller would take them, nil
// otherwise.
func validRuntimeSettings(res *resources.Resources, gw types.NamespacedName) *v1alpha1.RuntimeSettings {
	rs, _, _, ok := runtimeSettings(res, gw.String())
	if !ok {
		return nil
	}
	if _, err := xds.FromRuntime(rs); err != nil {
		return nil
	}
	return &rs
}

// runtimeSettings resolves the runtimeSettings of the Gateway named
// "namespace/name" from the profiles in res (sources names them). It
// reports false, with a note, when the profiles cannot be resolved; a
// profile missing from res counts as empty, with a note.
func runtimeSettings(res *resources.Resources, gateway string) (rs v1alpha1.RuntimeSettings, sources, note string, ok bool) {
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
				return rs, "", fmt.Sprintf("GatewayClass %s: %v; using the default runtimeSettings", gc.Name, err), false
			}
		}
		p, err := profile.ForGateway(gw, p, lookup)
		if err != nil {
			return rs, "", fmt.Sprintf("%v; using the default runtimeSettings", err), false
		}
		if len(missing) > 0 {
			note = fmt.Sprintf("ContourDeployment %s not in the input; its runtimeSettings are taken as the defaults", strings.Join(missing, " and "))
		}
		return p.Spec.RuntimeSettings, fmt.Sprint(p.Sources), note, true
	}
	return rs, "", "", false
}
