package offline

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/controller/pkg/resources"
)

// Random sequences of the changes a cluster sees (routes of every kind
// created, edited, deleted and listed in another order; a Gateway written
// with the same spec or a changed one; a Service going and coming back or
// its ports edited; ReferenceGrants, BackendTLSPolicies, XBackends, Namespaces,
// Ingresses and HTTPProxies going, coming back or edited) must leave a Translator that has seen every step producing what a
// fresh one does.
func TestIncrementalRandomChanges(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			base, _, err := LoadFiles([]string{in}, "")
			if err != nil {
				t.Fatal(err)
			}
			for seed := range uint64(3) {
				if !randomChanges(t, base, seed, 20) {
					return
				}
			}
		})
	}
}

// FuzzIncrementalChanges lets the fuzzer choose the golden input, the
// seed of the changes and how many there are.
func FuzzIncrementalChanges(f *testing.F) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		f.Fatal("no golden inputs", err)
	}
	bases := make([]*resources.Resources, len(inputs))
	for i, in := range inputs {
		if bases[i], _, err = LoadFiles([]string{in}, ""); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), uint64(100+i), uint8(10))
	}
	f.Fuzz(func(t *testing.T, input uint8, seed uint64, steps uint8) {
		randomChanges(t, bases[int(input)%len(bases)], seed, int(steps%40))
	})
}

// randomChanges checks, after each of steps random changes to base, that
// a Translator that has seen every step produces what a fresh one does. It
// returns false once the test has failed.
func randomChanges(t *testing.T, base *resources.Resources, seed uint64, steps int) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	snap := *base
	// The objects of a cluster have UIDs, which a status write keeps.
	snap.HTTPRoutes = withUIDs(base.HTTPRoutes)
	snap.GRPCRoutes = withUIDs(base.GRPCRoutes)
	snap.TLSRoutes = withUIDs(base.TLSRoutes)
	snap.TCPRoutes = withUIDs(base.TCPRoutes)
	snap.UDPRoutes = withUIDs(base.UDPRoutes)
	snap.HTTPProxies = withUIDs(base.HTTPProxies)
	var aside []*gatewayv1.HTTPRoute
	inc := newIncremental()
	inc.check(t, "first", &snap)
	for step := range steps {
		what := randomChange(rng, &snap, &aside, base)
		res := snap
		inc.check(t, fmt.Sprintf("seed %d step %d (%s)", seed, step, what), &res)
		if t.Failed() {
			return false
		}
	}
	return true
}

// randomChange changes snap as one event would and says what it did. Slices
// are replaced, never written in place: earlier snapshots share them.
func randomChange(rng *rand.Rand, snap *resources.Resources, aside *[]*gatewayv1.HTTPRoute, base *resources.Resources) string {
	routes := slices.Clone(snap.HTTPRoutes)
	switch rng.IntN(16) {
	case 0:
		if len(routes) == 0 {
			return "nothing"
		}
		i := rng.IntN(len(routes))
		*aside = append(*aside, routes[i])
		snap.HTTPRoutes = slices.Delete(routes, i, i+1)
		return "HTTPRoute deleted"
	case 1:
		if len(*aside) == 0 {
			return "nothing"
		}
		r := (*aside)[len(*aside)-1]
		*aside = (*aside)[:len(*aside)-1]
		snap.HTTPRoutes = append(routes, r.DeepCopy())
		return "HTTPRoute created"
	case 2:
		if len(routes) == 0 {
			return "nothing"
		}
		i := rng.IntN(len(routes))
		c := routes[i].DeepCopy()
		c.Generation++
		if len(c.Spec.Rules) > 1 {
			c.Spec.Rules = c.Spec.Rules[:len(c.Spec.Rules)-1]
		} else if len(c.Spec.Hostnames) > 0 {
			c.Spec.Hostnames = c.Spec.Hostnames[1:]
		} else {
			c.Spec.Hostnames = []gatewayv1.Hostname{"edited.example.com"}
		}
		routes[i] = c
		snap.HTTPRoutes = routes
		return "HTTPRoute edited"
	case 3:
		rng.Shuffle(len(routes), func(i, j int) { routes[i], routes[j] = routes[j], routes[i] })
		snap.HTTPRoutes = routes
		grpc := slices.Clone(snap.GRPCRoutes)
		rng.Shuffle(len(grpc), func(i, j int) { grpc[i], grpc[j] = grpc[j], grpc[i] })
		snap.GRPCRoutes = grpc
		return "listed in another order"
	case 4:
		return changeGateway(rng, snap, "Gateway status written", func(gw *gatewayv1.Gateway, _ int) {
			gw.ResourceVersion += "1"
		})
	case 5:
		return changeGateway(rng, snap, "Gateway listeners changed", func(gw *gatewayv1.Gateway, i int) {
			gw.Generation++
			if len(gw.Spec.Listeners) > 1 {
				gw.Spec.Listeners = gw.Spec.Listeners[1:]
			} else {
				gw.Spec = base.Gateways[i].Spec
			}
		})
	case 6:
		if len(snap.Services) == 0 {
			snap.Services = base.Services
			return "Services back"
		}
		svcs := slices.Clone(snap.Services)
		i := rng.IntN(len(svcs))
		snap.Services = slices.Delete(svcs, i, i+1)
		return "Service deleted"
	case 7:
		if len(snap.GRPCRoutes) == 0 {
			return "nothing"
		}
		grpc := slices.Clone(snap.GRPCRoutes)
		i := rng.IntN(len(grpc))
		c := grpc[i].DeepCopy()
		c.Generation++
		c.Spec.Hostnames = append(c.Spec.Hostnames, "edited.example.com")
		grpc[i] = c
		snap.GRPCRoutes = grpc
		return "GRPCRoute edited"
	case 15:
		return writeRouteStatus(rng, snap)
	case 10:
		return changeServicePorts(rng, snap)
	case 11:
		return changeGrants(rng, snap, base)
	case 12:
		return changeBackendTLS(rng, snap, base)
	case 13:
		return changeNamespaces(rng, snap, base)
	case 14:
		return changeStreamRoutes(rng, snap, base)
	case 8:
		switch rng.IntN(3) {
		case 0:
			return changeIngresses(rng, snap, base)
		case 1:
			return changeHTTPProxies(rng, snap, base)
		}
		return changeListenerSets(rng, snap, base)
	default:
		if len(snap.TLSRoutes)+len(snap.TCPRoutes) == 0 {
			return "nothing"
		}
		snap.TLSRoutes, snap.TCPRoutes = nil, nil
		if rng.IntN(2) == 0 {
			snap.TLSRoutes, snap.TCPRoutes = base.TLSRoutes, base.TCPRoutes
			return "stream routes back"
		}
		return "stream routes deleted"
	}
}

// changeGateway replaces a random Gateway by a changed copy.
func changeGateway(rng *rand.Rand, snap *resources.Resources, what string, change func(gw *gatewayv1.Gateway, i int)) string {
	if len(snap.Gateways) == 0 {
		return "nothing"
	}
	gws := slices.Clone(snap.Gateways)
	i := rng.IntN(len(gws))
	c := gws[i].DeepCopy()
	change(c, i)
	gws[i] = c
	snap.Gateways = gws
	return what
}

// changeListenerSets edits a ListenerSet's listeners (a hostname, which
// keeps every listener usable, or dropping its first), or deletes one, or
// brings the input's back.
func changeListenerSets(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	sets := slices.Clone(snap.ListenerSets)
	if len(sets) == 0 {
		return restore(&snap.ListenerSets, base.ListenerSets, "ListenerSets back")
	}
	i := rng.IntN(len(sets))
	c := sets[i].DeepCopy()
	c.Generation++
	switch rng.IntN(3) {
	case 0:
		snap.ListenerSets = slices.Delete(sets, i, i+1)
		return "ListenerSet deleted"
	case 1:
		for j := range c.Spec.Listeners {
			if c.Spec.Listeners[j].Hostname != nil {
				h := gatewayv1.Hostname("edited-" + string(*c.Spec.Listeners[j].Hostname))
				c.Spec.Listeners[j].Hostname = &h
				break
			}
		}
	default:
		if len(c.Spec.Listeners) < 2 {
			return "nothing"
		}
		c.Spec.Listeners = c.Spec.Listeners[1:]
	}
	sets[i] = c
	snap.ListenerSets = sets
	return "ListenerSet listeners changed"
}

// changeIngresses edits an Ingress's first rule's host (or its
// annotations), or deletes one, or brings the input's back.
func changeIngresses(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	ings := slices.Clone(snap.Ingresses)
	if len(ings) == 0 {
		return restore(&snap.Ingresses, base.Ingresses, "Ingresses back")
	}
	i := rng.IntN(len(ings))
	c := ings[i].DeepCopy()
	switch rng.IntN(3) {
	case 0:
		snap.Ingresses = slices.Delete(ings, i, i+1)
		return "Ingress deleted"
	case 1:
		c.Generation++
		if len(c.Spec.Rules) > 0 {
			c.Spec.Rules[0].Host = "edited-" + c.Spec.Rules[0].Host
		}
	default:
		// Annotations change no generation.
		if c.Annotations["ingress.kubernetes.io/force-ssl-redirect"] == "true" {
			delete(c.Annotations, "ingress.kubernetes.io/force-ssl-redirect")
		} else {
			c.Annotations = map[string]string{"ingress.kubernetes.io/force-ssl-redirect": "true"}
		}
	}
	ings[i] = c
	snap.Ingresses = ings
	return "Ingress changed"
}

// changeHTTPProxies deletes an HTTPProxy, edits one (its last include or
// route goes), writes one's status (a new object at the same generation),
// or brings the input's back.
func changeHTTPProxies(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	proxies := slices.Clone(snap.HTTPProxies)
	if len(proxies) == 0 {
		return restore(&snap.HTTPProxies, base.HTTPProxies, "HTTPProxies back")
	}
	i := rng.IntN(len(proxies))
	c := proxies[i].DeepCopy()
	switch rng.IntN(3) {
	case 0:
		snap.HTTPProxies = slices.Delete(proxies, i, i+1)
		return "HTTPProxy deleted"
	case 1:
		c.Generation++
		switch {
		case len(c.Spec.Includes) > 0:
			c.Spec.Includes = c.Spec.Includes[:len(c.Spec.Includes)-1]
		case len(c.Spec.Routes) > 1:
			c.Spec.Routes = c.Spec.Routes[:len(c.Spec.Routes)-1]
		default:
			c.Spec = base.HTTPProxies[0].Spec
		}
	default:
		c.Status.CurrentStatus = "valid"
	}
	proxies[i] = c
	snap.HTTPProxies = proxies
	return "HTTPProxy changed"
}

// restore puts the input's objects of a kind back when a snapshot has none.
func restore[T any](snap *[]T, base []T, what string) string {
	if len(base) == 0 {
		return "nothing"
	}
	*snap = base
	return what
}

// changeServicePorts adds a port to a Service, or renumbers its first:
// rules naming the old number lose their backend.
func changeServicePorts(rng *rand.Rand, snap *resources.Resources) string {
	if len(snap.Services) == 0 {
		return "nothing"
	}
	svcs := slices.Clone(snap.Services)
	i := rng.IntN(len(svcs))
	c := svcs[i].DeepCopy()
	if len(c.Spec.Ports) == 0 {
		return "nothing"
	}
	if rng.IntN(2) == 0 {
		p := c.Spec.Ports[0]
		p.Name, p.Port = "added", p.Port+1000
		c.Spec.Ports = append(c.Spec.Ports, p)
	} else {
		c.Spec.Ports[0].Port++
	}
	svcs[i] = c
	snap.Services = svcs
	return "Service ports edited"
}

// changeGrants deletes a ReferenceGrant, narrows its first "to" to one
// name, or brings the input's back.
func changeGrants(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	return deleteOrEdit(rng, &snap.ReferenceGrants, base.ReferenceGrants, "ReferenceGrant", func(g *gatewayv1beta1.ReferenceGrant) (*gatewayv1beta1.ReferenceGrant, string) {
		if len(g.Spec.To) == 0 {
			return nil, ""
		}
		c := g.DeepCopy()
		name := gatewayv1.ObjectName("narrowed")
		c.Spec.To[0].Name = &name
		return c, "narrowed"
	})
}

// changeBackendTLS deletes a BackendTLSPolicy, changes its hostname, or
// brings the input's back.
func changeBackendTLS(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	switch rng.IntN(3) {
	case 0:
		return changeXBackends(rng, snap, base)
	case 1:
		return changeTrafficPolicies(rng, snap, base)
	}
	return deleteOrEdit(rng, &snap.BackendTLSPolicies, base.BackendTLSPolicies, "BackendTLSPolicy", func(p *gatewayv1.BackendTLSPolicy) (*gatewayv1.BackendTLSPolicy, string) {
		c := p.DeepCopy()
		c.Generation++
		c.Spec.Validation.Hostname = "edited-" + c.Spec.Validation.Hostname
		return c, "hostname edited"
	})
}

// changeXBackends deletes an XBackend, moves it to another port (which
// the backendRefs naming the old one lose) or takes its TLS away, or
// brings the input's back.
func changeXBackends(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	return deleteOrEdit(rng, &snap.Backends, base.Backends, "XBackend", func(b *gatewayxv1alpha1.XBackend) (*gatewayxv1alpha1.XBackend, string) {
		c := b.DeepCopy()
		c.Generation++
		if c.Spec.TLS != nil {
			c.Spec.TLS = nil
			return c, "TLS dropped"
		}
		c.Spec.Port.Port++
		return c, "port moved"
	})
}

// changeTrafficPolicies deletes an XBackendTrafficPolicy, gives it a
// session (or takes its session away), or brings the input's back: rules
// read the session.
func changeTrafficPolicies(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	return deleteOrEdit(rng, &snap.BackendTrafficPolicies, base.BackendTrafficPolicies, "XBackendTrafficPolicy", func(p *gatewayxv1alpha1.XBackendTrafficPolicy) (*gatewayxv1alpha1.XBackendTrafficPolicy, string) {
		c := p.DeepCopy()
		c.Generation++
		if c.Spec.SessionPersistence != nil {
			c.Spec.SessionPersistence = nil
			return c, "session dropped"
		}
		c.Spec.SessionPersistence = &gatewayv1.SessionPersistence{SessionName: ptr("edited")}
		return c, "session added"
	})
}

// changeNamespaces deletes a Namespace, drops its labels (or gives it
// one), or brings the input's back: listeners' namespace selectors read
// them.
func changeNamespaces(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	return deleteOrEdit(rng, &snap.Namespaces, base.Namespaces, "Namespace", func(n *corev1.Namespace) (*corev1.Namespace, string) {
		c := n.DeepCopy()
		if len(c.Labels) > 0 {
			c.Labels = nil
			return c, "labels dropped"
		}
		c.Labels = map[string]string{"edited": "true"}
		return c, "labelled"
	})
}

// changeStreamRoutes deletes a TLSRoute, TCPRoute or UDPRoute, drops its
// last backendRef (or its hostnames), or brings the input's back.
func changeStreamRoutes(rng *rand.Rand, snap *resources.Resources, base *resources.Resources) string {
	switch rng.IntN(3) {
	case 0:
		return deleteOrEdit(rng, &snap.TLSRoutes, base.TLSRoutes, "TLSRoute", func(r *gatewayv1.TLSRoute) (*gatewayv1.TLSRoute, string) {
			c := r.DeepCopy()
			c.Generation++
			if len(c.Spec.Hostnames) > 1 {
				c.Spec.Hostnames = c.Spec.Hostnames[1:]
				return c, "hostname dropped"
			}
			c.Spec.Hostnames = append(c.Spec.Hostnames, "edited.example.com")
			return c, "hostname added"
		})
	case 1:
		return deleteOrEdit(rng, &snap.TCPRoutes, base.TCPRoutes, "TCPRoute", func(r *gatewayv1.TCPRoute) (*gatewayv1.TCPRoute, string) {
			c := r.DeepCopy()
			c.Generation++
			if len(c.Spec.Rules) == 0 || len(c.Spec.Rules[0].BackendRefs) == 0 {
				return nil, ""
			}
			c.Spec.Rules[0].BackendRefs = c.Spec.Rules[0].BackendRefs[:len(c.Spec.Rules[0].BackendRefs)-1]
			return c, "backendRef dropped"
		})
	default:
		return deleteOrEdit(rng, &snap.UDPRoutes, base.UDPRoutes, "UDPRoute", func(r *gatewayv1.UDPRoute) (*gatewayv1.UDPRoute, string) {
			c := r.DeepCopy()
			c.Generation++
			if len(c.Spec.Rules) == 0 || len(c.Spec.Rules[0].BackendRefs) == 0 {
				return nil, ""
			}
			c.Spec.Rules[0].BackendRefs = c.Spec.Rules[0].BackendRefs[:len(c.Spec.Rules[0].BackendRefs)-1]
			return c, "backendRef dropped"
		})
	}
}

// deleteOrEdit deletes a random object of a kind or replaces it by what
// edit returns (nil: no edit applies), or brings the input's back when a
// snapshot has none.
func deleteOrEdit[T any](rng *rand.Rand, objs *[]*T, base []*T, kind string, edit func(*T) (*T, string)) string {
	list := slices.Clone(*objs)
	if len(list) == 0 {
		return restore(objs, base, kind+" back")
	}
	i := rng.IntN(len(list))
	if rng.IntN(2) == 0 {
		*objs = slices.Delete(list, i, i+1)
		return kind + " deleted"
	}
	c, what := edit(list[i])
	if c == nil {
		return "nothing"
	}
	list[i] = c
	*objs = list
	return kind + " " + what
}

// withUIDs returns copies of routes with a UID each.
func withUIDs[T any, PT interface {
	*T
	client.Object
	DeepCopyObject() runtime.Object
}](routes []*T) []*T {
	out := make([]*T, len(routes))
	for i, r := range routes {
		c := PT(r).DeepCopyObject().(PT)
		c.SetUID(types.UID("uid-" + c.GetNamespace() + "/" + c.GetName()))
		out[i] = (*T)(c)
	}
	return out
}

// writeRouteStatus replaces a route's object as a status write does: a new
// object of the same UID and generation, another resourceVersion and
// status.
func writeRouteStatus(rng *rand.Rand, snap *resources.Resources) string {
	status := []gatewayv1.RouteParentStatus{{ControllerName: "example.com/other", ParentRef: gatewayv1.ParentReference{Name: "elsewhere"}}}
	// Only inputs with stream routes draw for them, so that the others
	// (and the seeds committed for them) change as they did before.
	if streams := len(snap.TLSRoutes) + len(snap.TCPRoutes) + len(snap.UDPRoutes); streams > 0 && rng.IntN(3) == 0 {
		switch i := rng.IntN(streams); {
		case i < len(snap.TLSRoutes):
			snap.TLSRoutes = replaceOne(rng, snap.TLSRoutes, func(c *gatewayv1.TLSRoute) { c.Status.Parents = status })
			return "TLSRoute status written"
		case i < len(snap.TLSRoutes)+len(snap.TCPRoutes):
			snap.TCPRoutes = replaceOne(rng, snap.TCPRoutes, func(c *gatewayv1.TCPRoute) { c.Status.Parents = status })
			return "TCPRoute status written"
		default:
			snap.UDPRoutes = replaceOne(rng, snap.UDPRoutes, func(c *gatewayv1.UDPRoute) { c.Status.Parents = status })
			return "UDPRoute status written"
		}
	}
	if len(snap.HTTPRoutes) > 0 && (len(snap.GRPCRoutes) == 0 || rng.IntN(2) == 0) {
		snap.HTTPRoutes = replaceOne(rng, snap.HTTPRoutes, func(c *gatewayv1.HTTPRoute) { c.Status.Parents = status })
		return "HTTPRoute status written"
	}
	if len(snap.GRPCRoutes) == 0 {
		return "nothing"
	}
	snap.GRPCRoutes = replaceOne(rng, snap.GRPCRoutes, func(c *gatewayv1.GRPCRoute) { c.Status.Parents = status })
	return "GRPCRoute status written"
}

// replaceOne returns routes with one, at random, replaced by a copy with
// another resourceVersion, edited by edit.
func replaceOne[T any, PT interface {
	*T
	client.Object
	DeepCopyObject() runtime.Object
}](rng *rand.Rand, routes []*T, edit func(PT)) []*T {
	out := slices.Clone(routes)
	i := rng.IntN(len(out))
	c := PT(out[i]).DeepCopyObject().(PT)
	c.SetResourceVersion(c.GetResourceVersion() + "1")
	edit(c)
	out[i] = (*T)(c)
	return out
}
