// Package translate is the first translation stage: every routing API's
// objects in, the IR of each Gateway and the status of every object out.
// It runs the processors side by side: the Gateway API's translator
// (package gatewayapi), which validates each Gateway's listeners and owns
// the engine's state, and the processors of HTTPProxy and Ingress as its
// peers, in precedence order (on one host and match, Gateway API over
// HTTPProxy over Ingress). Like them it is pure: the controller,
// `isobar-controller translate` and the golden tests share it.
package translate

import (
	"time"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/httpproxy"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate/httpproxies"
	"isobar.dev/controller/pkg/translate/ingresses"
)

// Options select what to translate (see gatewayapi.Options); the
// orchestrator sets Extensions.
type Options = gatewayapi.Options

// Result is the output of a translation.
type Result struct {
	// Gateways holds the IR of each translated Gateway, ordered by name.
	Gateways []*ir.Gateway
	// Status holds what the controller would write.
	Status *Status
}

// Status is what the controller writes: the Gateway API objects' status
// (and the ExtensionServices'), and what each processor reports on its
// API's objects.
type Status struct {
	*gatewayapi.Status
	// Ingresses holds what to report on each Ingress a translated
	// Gateway serves.
	Ingresses map[types.NamespacedName]*ingresses.Status
	// HTTPProxies holds the status of each HTTPProxy a translated Gateway
	// serves.
	HTTPProxies map[types.NamespacedName]*httpproxies.Status
}

// RouteKey names a route of any kind.
type RouteKey = gatewayapi.RouteKey

// Translate translates res once. A Translator does the same, faster when
// it translates snapshot after snapshot.
func Translate(res *resources.Resources, opts Options) *Result {
	return NewTranslator(opts).Translate(res)
}

// Translator translates snapshots, remembering per Gateway what its routes
// add up to (see gatewayapi.Translator).
type Translator struct {
	gateways *gatewayapi.Translator
}

// NewTranslator returns a Translator that has seen nothing yet.
func NewTranslator(opts Options) *Translator {
	opts.Extensions = extensions{}
	return &Translator{gateways: gatewayapi.NewTranslator(opts)}
}

// Translate translates res. It never fails: what cannot be translated is
// reported in the status of the object at fault, and the rest is
// translated.
func (tr *Translator) Translate(res *resources.Resources) *Result {
	proxies, ings := httpproxies.Processor{}, ingresses.Processor{}
	r := tr.gateways.Translate(res, proxies, ings)
	return &Result{Gateways: r.Gateways, Status: &Status{Status: r.Status, Ingresses: ings, HTTPProxies: proxies}}
}

// extensions resolve the profile's ExtensionServices as an HTTPProxy's
// are resolved: they are Contour's API.
type extensions struct{}

func (extensions) Server(e env.Env, names *backend.Names, ref types.NamespacedName, purpose string) (string, string, time.Duration, []backend.ClusterSpec, string) {
	return httpproxy.ExtensionServer(e, names, ref, purpose)
}

func (extensions) Status(e env.Env, x *contourv1alpha1.ExtensionService) contourv1alpha1.ExtensionServiceStatus {
	return httpproxy.ExtensionStatus(e, nil, x)
}
