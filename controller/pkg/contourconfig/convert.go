// Package contourconfig carries a Contour install's configuration over to
// Isobar: Contour's ContourConfiguration, or its ContourDeployment (the
// configuration and the deployment settings), becomes an Isobar profile
// (ContourDeployment, isobar.dev/v1alpha1), with the GatewayClass,
// Gateway and IngressClasses that serve the user's HTTPProxies and
// Ingresses with it. Every setting the input sets is carried, or named
// in a Note with the reason it is not (Rules): nothing is dropped
// silently.
package contourconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
)

// Source is one Contour configuration object, as read from a file.
type Source struct {
	// File and Object name where it came from, for messages.
	File, Object string
	Config       *contourv1alpha1.ContourConfigurationSpec
	// Deployment is set for a Contour ContourDeployment.
	Deployment *contourv1alpha1.ContourDeploymentSpec
	// notes are what reading it found not carried (a contour.yaml's
	// keys that have no ContourConfiguration field set).
	notes []Note
	// newer are the newer settings it sets (newerSettings), their values
	// as JSON.
	newer map[string]string
}

// Note is a setting the profile does not carry.
type Note struct {
	Source  string // file: kind/name
	Setting string // its path, as in Rules
	Value   string // its value, as JSON
	Why     string
}

func (n Note) String() string {
	if n.Setting == "" {
		return fmt.Sprintf("%s: %s", n.Source, n.Why)
	}
	return fmt.Sprintf("%s: %s = %s not carried over: %s", n.Source, n.Setting, n.Value, n.Why)
}

// Options name what the conversion writes.
type Options struct {
	// Namespace and Name of the profile and of the Gateway.
	Namespace, Name string
	// GatewayClass is the name of the GatewayClass.
	GatewayClass string
	// ControllerName is the GatewayClass's controllerName.
	ControllerName string
}

// Result is what a Contour configuration becomes.
type Result struct {
	Profile        *v1alpha1.ContourDeployment
	GatewayClass   *gatewayv1.GatewayClass
	Gateway        *gatewayv1.Gateway
	IngressClasses []*networkingv1.IngressClass
	Notes          []Note
}

// Convert carries src over. A value the profile cannot take (one Contour
// itself would refuse, or one out of the profile's range) is an error
// naming the file, object and setting.
func Convert(src Source, opt Options) (*Result, error) {
	where := src.File + ": " + src.Object
	in := &input{config: src.Config, deployment: src.Deployment, newer: src.newer}
	if in.config == nil {
		in.config = &contourv1alpha1.ContourConfigurationSpec{}
	}
	leaves := map[string]string{}
	if err := flatten("", in.config, leaves); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	maps.Copy(leaves, src.newer)
	if d := in.deployment; d != nil {
		deployment := struct {
			Contour        *contourv1alpha1.ContourSettings `json:"contour,omitempty"`
			Envoy          *contourv1alpha1.EnvoySettings   `json:"envoy,omitempty"`
			ResourceLabels map[string]string                `json:"resourceLabels,omitempty"`
		}{d.Contour, d.Envoy, d.ResourceLabels} //nolint:staticcheck // a deprecated setting is still one a user may have set
		if err := flatten("", deployment, leaves); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	profile := &v1alpha1.ContourDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ContourDeployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: opt.Namespace, Name: opt.Name},
	}
	res := &Result{Profile: profile, Notes: slices.Clone(src.notes)}
	carried := map[*Rule]bool{}
	for _, path := range slices.Sorted(maps.Keys(leaves)) {
		r := ruleFor(path)
		switch {
		case r == nil:
			return nil, fmt.Errorf("%s: %s is not a setting of Contour's configuration", where, path)
		case r.carry != nil:
			if carried[r] {
				continue
			}
			carried[r] = true
			var nc notCarried
			if err := r.carry(in, &profile.Spec); errors.As(err, &nc) {
				res.Notes = append(res.Notes, Note{Source: where, Setting: path, Value: leaves[path], Why: string(nc)})
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		default:
			why := r.NotCarried
			if why == "" {
				why = "the operator does this: " + r.Operator
			}
			res.Notes = append(res.Notes, Note{Source: where, Setting: path, Value: leaves[path], Why: why})
		}
	}
	res.GatewayClass = &gatewayv1.GatewayClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "GatewayClass"},
		ObjectMeta: metav1.ObjectMeta{Name: opt.GatewayClass},
		Spec: gatewayv1.GatewayClassSpec{
			ControllerName: gatewayv1.GatewayController(opt.ControllerName),
			ParametersRef: &gatewayv1.ParametersReference{Group: gatewayv1.Group(v1alpha1.GroupVersion.Group), Kind: "ContourDeployment",
				Name: opt.Name, Namespace: ptr.To(gatewayv1.Namespace(opt.Namespace))},
		},
	}
	// The HTTPProxies' and Ingresses' listeners: the Gateway's first
	// listener, ingress-http, serves them over HTTP, and ingress-https
	// their TLS virtual hosts; its certificate answers clients whose
	// server name is none of theirs: the fallback certificate, if any.
	cert := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(opt.Name + "-default-certificate")}
	if hp := profile.Spec.RuntimeSettings.HTTPProxy; hp != nil && hp.FallbackCertificate != nil {
		cert = gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(hp.FallbackCertificate.Name)}
		if ns := hp.FallbackCertificate.Namespace; ns != opt.Namespace {
			cert.Namespace = ptr.To(gatewayv1.Namespace(ns))
			res.Notes = append(res.Notes, Note{Source: where, Setting: "httpproxy.fallbackCertificate", Value: ns + "/" + hp.FallbackCertificate.Name,
				Why: "the Gateway's ingress-https listener presents it too: a ReferenceGrant in " + ns + " must let Gateways of " + opt.Namespace + " refer to it"})
		}
	} else {
		res.Notes = append(res.Notes, Note{Source: where,
			Why: "create the TLS Secret " + opt.Namespace + "/" + string(cert.Name) + ": the Gateway's ingress-https listener presents it to TLS clients whose server name is no HTTPProxy's or Ingress's"})
	}
	everyone := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}}
	res.Gateway = &gatewayv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Namespace: opt.Namespace, Name: opt.Name},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(opt.GatewayClass),
			Listeners: []gatewayv1.Listener{
				{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80, AllowedRoutes: everyone},
				{Name: "ingress-https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, AllowedRoutes: everyone,
					TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{cert}}},
			},
		},
	}
	// Contour's client certificate is presented to every TLS backend; so
	// is the Gateway's backend certificate.
	if c := in.config.Envoy; c != nil && c.ClientCertificate != nil {
		ref := &gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(c.ClientCertificate.Name)}
		if ns := c.ClientCertificate.Namespace; ns != "" && ns != opt.Namespace {
			ref.Namespace = ptr.To(gatewayv1.Namespace(ns))
			res.Notes = append(res.Notes, Note{Source: where, Setting: "envoy.clientCertificate", Value: ns + "/" + c.ClientCertificate.Name,
				Why: "the Gateway presents it to TLS backends: a ReferenceGrant in " + ns + " must let Gateways of " + opt.Namespace + " refer to it"})
		}
		res.Gateway.Spec.TLS = &gatewayv1.GatewayTLSConfig{Backend: &gatewayv1.GatewayBackendTLS{ClientCertificateRef: ref}}
	}
	classes := []string{"contour"}
	if i := in.config.Ingress; i != nil && len(i.ClassNames) > 0 {
		classes = i.ClassNames
	}
	for _, name := range classes {
		res.IngressClasses = append(res.IngressClasses, &networkingv1.IngressClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "IngressClass"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingv1.IngressClassSpec{
				Controller: opt.ControllerName,
				Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: opt.Name,
					Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To(opt.Namespace)},
			},
		})
	}
	return res, nil
}

// ruleFor is the rule of the longest path that is path or holds it.
func ruleFor(path string) *Rule {
	var best *Rule
	for i := range Rules {
		r := &Rules[i]
		if (path == r.Path || strings.HasPrefix(path, r.Path+".")) && (best == nil || len(r.Path) > len(best.Path)) {
			best = r
		}
	}
	return best
}

// flatten records v's leaves (scalars, lists and maps) as JSON, by their
// dotted paths under prefix; unset fields have none.
func flatten(prefix string, v any, into map[string]string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var tree any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&tree); err != nil {
		return err
	}
	walkJSON(prefix, tree, into)
	return nil
}

func walkJSON(path string, v any, into map[string]string) {
	m, ok := v.(map[string]any)
	if !ok || isFreeMap(path) {
		if b, err := json.Marshal(v); err == nil && string(b) != "null" && string(b) != "{}" {
			into[path] = string(b)
		}
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		walkJSON(p, m[k], into)
	}
}

// isFreeMap: maps of user keys (annotations, labels, selectors) and
// Kubernetes types are leaves; their keys are not settings.
func isFreeMap(path string) bool {
	for _, suffix := range []string{"Annotations", "Labels", "nodeSelector", "resources", "set", "resourceLabels", "defaultGlobalRateLimitPolicy", "strategy", "updateStrategy"} {
		if strings.HasSuffix(path, suffix) {
			return true
		}
	}
	return false
}

// Prune drops the empty objects and nulls a typed object marshals to
// (unset structs, status), so that what is written is what was set.
func Prune(obj any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	prune(m)
	return m, nil
}

func prune(m map[string]any) bool {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && prune(sub) || v == nil {
			delete(m, k)
		}
	}
	return len(m) == 0
}
