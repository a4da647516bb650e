package offline

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/controller/pkg/graph"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// Types are the parts of a result Render can show.
var Types = []string{"status", "ir", "listeners", "routes", "clusters", "endpoints", "secrets", "runtime", "all", "graph"}

// Render shows part of a result as YAML or JSON; the graph of what the
// Gateways serve (package graph) in Graphviz's DOT language.
func Render(r *Result, typ, format string) ([]byte, error) {
	if !slices.Contains(Types, typ) {
		return nil, fmt.Errorf("unknown type %q: want one of %s", typ, strings.Join(Types, ", "))
	}
	if typ == "graph" {
		if format != "dot" {
			return nil, fmt.Errorf("--type graph is drawn with -o dot (Graphviz: dot -Tsvg)")
		}
		return graph.DOT(r.Input, r.Gateways.Status), nil
	}
	var v any
	var err error
	switch typ {
	case "status":
		v = statusObjects(r)
	case "ir":
		v = r.Gateways.Gateways
	case "all":
		all := map[string]any{"status": statusObjects(r), "ir": r.Gateways.Gateways}
		for _, t := range []string{"listeners", "routes", "clusters", "endpoints", "secrets", "runtime"} {
			if all[t], err = envoyResources(r, t); err != nil {
				return nil, err
			}
		}
		v = all
	default:
		if v, err = envoyResources(r, typ); err != nil {
			return nil, err
		}
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", typ, err)
	}
	if js, err = dropNullTimes(js); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", typ, err)
	}
	switch format {
	case "json":
		var buf bytes.Buffer
		if err := json.Indent(&buf, js, "", "  "); err != nil {
			return nil, err
		}
		buf.WriteByte('\n')
		return buf.Bytes(), nil
	case "yaml", "":
		return toYAML(js)
	default:
		return nil, fmt.Errorf("unknown output format %q: want yaml or json", format)
	}
}

// object is a Kubernetes object as `kubectl get -o yaml` shows it, with only
// the status the controller writes.
type object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Status     any               `json:"status"`
}

func statusObjects(r *Result) []object {
	out := []object{}
	classes := make([]string, 0, len(r.Gateways.Status.GatewayClasses))
	for name := range r.Gateways.Status.GatewayClasses {
		classes = append(classes, name)
	}
	slices.Sort(classes)
	for _, name := range classes {
		out = append(out, object{APIVersion: gatewayv1.GroupVersion.String(), Kind: "GatewayClass",
			Metadata: metav1.ObjectMeta{Name: name}, Status: r.Gateways.Status.GatewayClasses[name]})
	}
	for _, k := range sortedKeys(r.Gateways.Status.Gateways) {
		out = append(out, object{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}, Status: r.Gateways.Status.Gateways[k]})
	}
	for _, k := range sortedKeys(r.Gateways.Status.ListenerSets) {
		out = append(out, object{APIVersion: gatewayv1.GroupVersion.String(), Kind: "ListenerSet",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}, Status: r.Gateways.Status.ListenerSets[k].Status})
	}
	// An Ingress has no conditions: the controller writes its load
	// balancer status and reports problems as Events; offline shows the
	// problems.
	for _, k := range sortedKeys(r.Gateways.Status.Ingresses) {
		is := r.Gateways.Status.Ingresses[k]
		out = append(out, object{APIVersion: "networking.k8s.io/v1", Kind: "Ingress",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
			Status:   map[string]any{"gateway": is.Gateway.String(), "served": is.Served, "events": is.Problems}})
	}
	for _, k := range sortedKeys(r.Gateways.Status.HTTPProxies) {
		out = append(out, object{APIVersion: "projectcontour.io/v1", Kind: "HTTPProxy",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
			Status:   r.Gateways.Status.HTTPProxies[k].Status})
	}
	for _, k := range sortedKeys(r.Gateways.Status.ExtensionServices) {
		out = append(out, object{APIVersion: "projectcontour.io/v1alpha1", Kind: "ExtensionService",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
			Status:   r.Gateways.Status.ExtensionServices[k]})
	}
	for _, k := range sortedKeys(r.Gateways.Status.BackendTrafficPolicies) {
		out = append(out, object{APIVersion: "gateway.networking.x-k8s.io/v1alpha1", Kind: "XBackendTrafficPolicy",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
			Status:   gatewayv1.PolicyStatus{Ancestors: r.Gateways.Status.BackendTrafficPolicies[k]}})
	}
	for _, k := range sortedKeys(r.Gateways.Status.Backends) {
		entries := r.Gateways.Status.Backends[k]
		st := gatewayxv1alpha1.BackendStatus{Ancestors: make([]gatewayxv1alpha1.BackendAncestorStatus, len(entries))}
		for i, a := range entries {
			st.Ancestors[i] = gatewayxv1alpha1.BackendAncestorStatus{AncestorRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions}
		}
		out = append(out, object{APIVersion: "gateway.networking.x-k8s.io/v1alpha1", Kind: "XBackend",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}, Status: st})
	}
	for _, k := range sortedKeys(r.Gateways.Status.BackendTLSPolicies) {
		out = append(out, object{APIVersion: gatewayv1.GroupVersion.String(), Kind: "BackendTLSPolicy",
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
			Status:   gatewayv1.PolicyStatus{Ancestors: r.Gateways.Status.BackendTLSPolicies[k]}})
	}
	routes := r.Gateways.Status.Routes
	keys := make([]translate.RouteKey, 0, len(routes))
	for k := range routes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b translate.RouteKey) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for _, k := range keys {
		out = append(out, object{APIVersion: gatewayv1.GroupVersion.String(), Kind: k.Kind,
			Metadata: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
			Status:   gatewayv1.RouteStatus{Parents: routes[k]}})
	}
	return out
}

func sortedKeys[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// gatewayResources are one Gateway's Envoy resources of one type.
type gatewayResources struct {
	Gateway   string            `json:"gateway"`
	Resources []json.RawMessage `json:"resources"`
}

func envoyResources(r *Result, typ string) ([]gatewayResources, error) {
	out := []gatewayResources{}
	for i, g := range r.Gateways.Gateways {
		gr := gatewayResources{Gateway: g.Name, Resources: []json.RawMessage{}}
		for _, m := range pick(r.XDS[i], typ) {
			js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("rendering %s: %w", typ, err)
			}
			gr.Resources = append(gr.Resources, js)
		}
		out = append(out, gr)
	}
	return out, nil
}

// pick returns the resources of one type; secrets lose their private keys,
// which must never be printed.
func pick(x *xds.Resources, typ string) []proto.Message {
	var out []proto.Message
	switch typ {
	case "listeners":
		for _, m := range x.Listeners {
			out = append(out, m)
		}
	case "routes":
		for _, m := range x.Routes {
			out = append(out, m)
		}
	case "clusters":
		for _, m := range x.Clusters {
			out = append(out, m)
		}
	case "endpoints":
		for _, m := range x.Endpoints {
			out = append(out, m)
		}
	case "runtime":
		for _, m := range x.Runtimes {
			out = append(out, m)
		}
	case "secrets":
		for _, m := range x.Secrets {
			redacted := proto.Clone(m).(*tlsv3.Secret)
			if c := redacted.GetTlsCertificate(); c != nil && c.PrivateKey != nil {
				c.PrivateKey = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "[redacted]"}}
			}
			out = append(out, redacted)
		}
	}
	return out
}

// dropNullTimes removes the null lastTransitionTime of conditions: the
// status writer sets it when a condition changes, which offline never
// happens.
func dropNullTimes(js []byte) ([]byte, error) {
	if !bytes.Contains(js, []byte(`"lastTransitionTime":null`)) {
		return js, nil
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	var drop func(any)
	drop = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if t, ok := x["lastTransitionTime"]; ok && t == nil {
				delete(x, "lastTransitionTime")
			}
			for _, e := range x {
				drop(e)
			}
		case []any:
			for _, e := range x {
				drop(e)
			}
		}
	}
	drop(v)
	return json.Marshal(v)
}
