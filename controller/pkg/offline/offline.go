// Package offline translates Gateway API YAML files without a cluster, as
// `isobar-controller translate` and the golden tests do: load, run both
// translation stages, check the Envoy resources, and render any part of the
// result for a person.
package offline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/programmed"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdscheck"
)

// DefaultControllerName is the controllerName Isobar serves by default.
const DefaultControllerName = v1alpha1.DefaultControllerName

// Options configure a translation.
type Options struct {
	ControllerName string
	Gateways       []types.NamespacedName
}

// Result is everything a translation produced.
type Result struct {
	Input    *resources.Resources
	Skipped  []resources.Skipped
	Gateways *translate.Result
	// XDS holds each Gateway's Envoy resources, in the order of
	// Gateways.Gateways.
	XDS []*xds.Resources
	// Notes say where the translation had to assume what a cluster would
	// know, such as a profile missing from the input.
	Notes []string
}

// LoadFiles reads YAML files ("-" is standard input; a directory means its
// *.yaml and *.yml files) into one snapshot, namespaced objects without a
// namespace going into namespace ("" for "default"). A file or document
// that cannot be read does not stop the others: the error lists every one,
// and the snapshot holds the rest.
func LoadFiles(paths []string, namespace string) (*resources.Resources, []resources.Skipped, error) {
	res := &resources.Resources{Namespace: namespace}
	var skipped []resources.Skipped
	var files []string
	var errs []error
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			for _, pattern := range []string{"*.yaml", "*.yml"} {
				m, err := filepath.Glob(filepath.Join(p, pattern))
				if err != nil {
					return nil, nil, err
				}
				files = append(files, m...)
			}
			continue
		}
		files = append(files, p)
	}
	for _, p := range files {
		f := os.Stdin
		if p != "-" {
			var err error
			if f, err = os.Open(p); err != nil {
				errs = append(errs, fmt.Errorf("reading input: %w", err))
				continue
			}
		}
		s, err := res.Load(p, f)
		if p != "-" {
			f.Close()
		}
		errs = append(errs, err)
		skipped = append(skipped, s...)
	}
	return res, skipped, errors.Join(errs...)
}

// TranslateFiles loads files and translates every Gateway of
// DefaultControllerName in them.
func TranslateFiles(files ...string) (*Result, error) {
	res, _, err := LoadFiles(files, "")
	if err != nil {
		return nil, err
	}
	return Translate(res, Options{})
}

// Translate runs both stages on res and checks the Envoy resources. Each
// Gateway's Envoy configuration follows the runtimeSettings of its profile
// (the ContourDeployments its class's and its own parametersRef name), as
// the operator hands them to its controller; Notes say when res does not
// hold a usable one. An error means the translator produced resources Envoy
// would reject: a bug, never a user's mistake, which status reports
// instead.
func Translate(res *resources.Resources, opts Options) (*Result, error) {
	if opts.ControllerName == "" {
		opts.ControllerName = DefaultControllerName
	}
	out := &Result{Input: res}
	o := profileOptions(func() *resources.Resources { return res })
	o.ControllerName, o.Gateways = gatewayv1.GatewayController(opts.ControllerName), opts.Gateways
	out.Gateways = translate.Translate(res, o)
	if len(opts.Gateways) == 0 {
		out.Notes = append(out.Notes, unservedNotes(res, out.Gateways, opts.ControllerName)...)
	} else {
		out.Notes = append(out.Notes, chosenNotOurs(res, opts.Gateways, opts.ControllerName)...)
	}
	// What the controller sets once the fleet has acknowledged.
	programmed.Status(out.Gateways.Status.Status, programmed.Acknowledged)
	for _, g := range out.Gateways.Gateways {
		s, note := settings(res, g.Name)
		if note != "" {
			out.Notes = append(out.Notes, fmt.Sprintf("gateway %s: %s", g.Name, note))
		}
		r, err := xds.Translate(g, s)
		if err != nil {
			return nil, fmt.Errorf("gateway %s: %w", g.Name, err)
		}
		if err := xdscheck.Check(r); err != nil {
			return nil, fmt.Errorf("gateway %s: generated Envoy configuration is invalid: %w", g.Name, err)
		}
		out.XDS = append(out.XDS, r)
	}
	return out, nil
}
