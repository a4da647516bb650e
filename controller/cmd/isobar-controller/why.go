package main

import (
	"fmt"
	"net"
	"slices"
	"strings"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/controller/pkg/gatewayapi"
	"isobar.dev/controller/pkg/offline"
)

// why says what in the input made Envoy answer an error or find no
// endpoints: the matched route's conditions that are not true, and for a
// backend without endpoints, what the input lacks. Envoy's configuration
// alone can only say "500"; the person asking wants the cause.
func why(result *offline.Result, gateway, host string, a *envoysim.Answer) []string {
	if a.Route == "" && a.Response != nil && a.Response.Status == 404 {
		return notRouted(result, gateway, host)
	}
	var out []string
	failed := a.Response != nil && a.Response.Status >= 500
	for _, b := range a.Backends {
		if b.Status != 0 || len(b.Endpoints) == 0 {
			failed = true
			if reason := noEndpoints(result, b.Cluster); reason != "" {
				out = append(out, reason)
			}
		}
	}
	if !failed {
		return out
	}
	if key, ok := routeKey(a.Route); ok {
		if key.Kind == "Ingress" {
			ing := types.NamespacedName{Namespace: key.Namespace, Name: key.Name}
			if is := result.Gateways.Status.Ingresses[ing]; is != nil {
				for _, p := range is.Problems {
					out = append(out, fmt.Sprintf("Ingress %s: %s", ing, p))
				}
			}
		}
		if key.Kind == "HTTPProxy" {
			name := types.NamespacedName{Namespace: key.Namespace, Name: key.Name}
			if ps := result.Gateways.Status.HTTPProxies[name]; ps != nil {
				for _, c := range ps.Status.Conditions {
					for _, e := range c.Errors {
						out = append(out, fmt.Sprintf("HTTPProxy %s: %s %s: %s", name, e.Type, e.Reason, e.Message))
					}
				}
			}
		}
		for _, ps := range result.Gateways.Status.Routes[key] {
			if parentOf(key, ps) != gateway {
				continue
			}
			for _, c := range ps.Conditions {
				if c.Status != metav1.ConditionTrue {
					out = append(out, fmt.Sprintf("%s %s/%s: %s=%s %s: %s", key.Kind, key.Namespace, key.Name, c.Type, c.Status, c.Reason, c.Message))
				}
			}
		}
	}
	return slices.Compact(out)
}

// routeKey reads Isobar's Envoy route name
// (<kind>/<namespace>/<name>/rule/...) back into the route.
func routeKey(route string) (gatewayapi.RouteKey, bool) {
	p := strings.Split(route, "/")
	kinds := map[string]string{"httproute": "HTTPRoute", "grpcroute": "GRPCRoute", "ingress": "Ingress", "httpproxy": "HTTPProxy"}
	if len(p) < 3 || kinds[p[0]] == "" {
		return gatewayapi.RouteKey{}, false
	}
	return gatewayapi.RouteKey{Kind: kinds[p[0]], Namespace: p[1], Name: p[2]}, true
}

// noEndpoints says why a Service's cluster has no endpoints in the input.
func noEndpoints(result *offline.Result, cluster string) string {
	p := strings.Split(cluster, "/")
	if len(p) < 3 || p[0] == "isobar" {
		return ""
	}
	ns, name := p[0], p[1]
	if !slices.ContainsFunc(result.Input.Services, func(s *corev1.Service) bool { return s.Namespace == ns && s.Name == name }) {
		return fmt.Sprintf("no endpoints: Service %s/%s does not exist in the input", ns, name)
	}
	found := false
	for _, s := range result.Input.EndpointSlices {
		found = found || s.Namespace == ns && s.Labels[discoveryv1.LabelServiceName] == name
	}
	if !found {
		return fmt.Sprintf("no endpoints: the input has no EndpointSlice of Service %s/%s (in a cluster: the Service selects no ready Pod)", ns, name)
	}
	return fmt.Sprintf("no endpoints: the EndpointSlices of Service %s/%s have no ready endpoint on the port the route uses", ns, name)
}

// notRouted says, for a request no route matched, which routes of the
// Gateway for its host are refused or partly refused: the most common
// cause of a 404 someone did not expect (a regular expression Envoy would
// not take, a backend in a namespace without a ReferenceGrant).
func notRouted(result *offline.Result, gateway, host string) []string {
	host = strings.ToLower(strings.TrimSuffix(hostOnly(host), "."))
	var out []string
	for key, parents := range result.Gateways.Status.Routes {
		if !routeHasHost(result, key, host) {
			continue
		}
		for _, ps := range parents {
			if parentOf(key, ps) != gateway {
				continue
			}
			for _, c := range ps.Conditions {
				if c.Status != metav1.ConditionTrue && c.Type != "PartiallyInvalid" || c.Type == "PartiallyInvalid" && c.Status == metav1.ConditionTrue {
					out = append(out, fmt.Sprintf("%s %s/%s: %s=%s %s: %s", key.Kind, key.Namespace, key.Name, c.Type, c.Status, c.Reason, c.Message))
				}
			}
		}
	}
	for name, ps := range result.Gateways.Status.HTTPProxies {
		p := proxyOf(result, name)
		if p == nil || p.Spec.VirtualHost == nil || !strings.EqualFold(p.Spec.VirtualHost.Fqdn, host) {
			continue
		}
		for _, c := range ps.Status.Conditions {
			for _, e := range c.Errors {
				out = append(out, fmt.Sprintf("HTTPProxy %s: %s %s: %s", name, e.Type, e.Reason, e.Message))
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "no route of Gateway "+gateway+" matches the request's host and path, and none for the host is refused")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// routeHasHost reports whether a Gateway API route of key takes requests
// for host: one of its hostnames matches it (a wildcard, one label), or
// it has none.
func routeHasHost(result *offline.Result, key gatewayapi.RouteKey, host string) bool {
	var names []gatewayv1.Hostname
	switch key.Kind {
	case "HTTPRoute":
		i := slices.IndexFunc(result.Input.HTTPRoutes, func(r *gatewayv1.HTTPRoute) bool { return r.Namespace == key.Namespace && r.Name == key.Name })
		if i < 0 {
			return false
		}
		names = result.Input.HTTPRoutes[i].Spec.Hostnames
	case "GRPCRoute":
		i := slices.IndexFunc(result.Input.GRPCRoutes, func(r *gatewayv1.GRPCRoute) bool { return r.Namespace == key.Namespace && r.Name == key.Name })
		if i < 0 {
			return false
		}
		names = result.Input.GRPCRoutes[i].Spec.Hostnames
	default:
		return false
	}
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		h := strings.ToLower(string(n))
		if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) && !strings.Contains(strings.TrimSuffix(host, h[1:]), ".") {
			return true
		}
	}
	return false
}

// hostOnly is an authority without its port.
func hostOnly(authority string) string {
	if h, _, err := net.SplitHostPort(authority); err == nil {
		return h
	}
	return authority
}

// proxyOf is the input's HTTPProxy of name.
func proxyOf(result *offline.Result, name types.NamespacedName) *contourv1.HTTPProxy {
	for _, p := range result.Input.HTTPProxies {
		if p.Namespace == name.Namespace && p.Name == name.Name {
			return p
		}
	}
	return nil
}

// parentOf is the Gateway, "namespace/name", a route's parent status is
// about.
func parentOf(key gatewayapi.RouteKey, ps gatewayv1.RouteParentStatus) string {
	if ns := ps.ParentRef.Namespace; ns != nil {
		return string(*ns) + "/" + string(ps.ParentRef.Name)
	}
	return key.Namespace + "/" + string(ps.ParentRef.Name)
}
