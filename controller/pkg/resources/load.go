package resources

import (
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	"isobar.dev/api/v1alpha1"

	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Skipped is an object that Load read but does not translate, such as a
// Deployment in the same file as a Gateway.
type Skipped struct {
	Source   string // file name and document index
	TypeMeta metav1.TypeMeta
}

// Load adds the objects of a multi-document YAML (or JSON) stream to r.
// name names the stream in errors, which also give the document's index
// (from 1). List kinds (v1 List, and any *List) are unpacked. Objects of
// kinds the translator does not read are returned, not added.
//
// Objects are decoded as the API server would take them with strict field
// validation (`kubectl apply`'s default): an unknown or duplicated field is
// an error naming it, not a field silently dropped (a `match:` typo for
// `matches:` would otherwise widen a route to every path). A namespaced
// object without a namespace goes into r.Namespace ("default" if empty),
// as kubectl puts it. A bad document does not stop the others: every
// error is returned, joined, and every good document is added.
func (r *Resources) Load(name string, in io.Reader) ([]Skipped, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(in, 1<<16))
	type document struct {
		index int
		yaml  []byte
		json  []byte
		err   error
	}
	var docs []*document
	var readErr error
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("%s: document %d: %w", name, doc, err)
			break
		}
		if len(bytes.TrimSpace(data)) != 0 {
			docs = append(docs, &document{index: doc, yaml: data})
		}
	}
	// Converting YAML to JSON is most of the cost of loading; documents
	// convert independently, so every core takes a share. Objects are
	// added in document order afterwards.
	workers := min(runtime.GOMAXPROCS(0), len(docs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(docs); i += workers {
				docs[i].json, docs[i].err = yaml.YAMLToJSON(docs[i].yaml)
			}
		}()
	}
	wg.Wait()
	var skipped []Skipped
	var errs []error
	for _, d := range docs {
		if d.err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: not YAML: %w", name, d.index, d.err))
			continue
		}
		if bytes.Equal(bytes.TrimSpace(d.json), []byte("null")) {
			continue // a document holding only comments
		}
		s, err := r.add(d.json)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", name, d.index, err))
		}
		for _, tm := range s {
			skipped = append(skipped, Skipped{Source: fmt.Sprintf("%s: document %d", name, d.index), TypeMeta: tm})
		}
	}
	return skipped, errors.Join(append(errs, readErr)...)
}

// add decodes one JSON object (or list) into r.
func (r *Resources) add(js []byte) ([]metav1.TypeMeta, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, fmt.Errorf("not a Kubernetes object: apiVersion and kind are required")
	}
	if tm.APIVersion == "v1" && tm.Kind == "List" || len(tm.Kind) > 4 && tm.Kind[len(tm.Kind)-4:] == "List" {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &list); err != nil {
			return nil, fmt.Errorf("%s: %w", tm.Kind, err)
		}
		var skipped []metav1.TypeMeta
		var errs []error
		for i, item := range list.Items {
			s, err := r.add(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s item %d: %w", tm.Kind, i, err))
			}
			skipped = append(skipped, s...)
		}
		return skipped, errors.Join(errs...)
	}
	decode, ok := decoders[tm.GroupVersionKind().GroupKind().String()]
	if !ok || !decode.versions[tm.GroupVersionKind().Version] {
		return []metav1.TypeMeta{tm}, nil
	}
	// What the API server defaults, the offline tools default too, so
	// that an omitted field means what it means on a cluster.
	if ds := contourDefaults[tm.GroupVersionKind().GroupKind().String()+"/"+tm.GroupVersionKind().Version]; len(ds) > 0 {
		var err error
		if js, err = withDefaults(js, ds); err != nil {
			return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
		}
	}
	if err := decode.into(r, js, !decode.clusterScoped); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return nil, nil
}

type decoder struct {
	versions      map[string]bool
	into          func(r *Resources, js []byte, namespaced bool) error
	clusterScoped bool
}

// decode decodes an object as the API server's strict field validation
// does, names the object in its errors, and defaults its namespace.
func (r *Resources) decode(js []byte, obj metav1.Object, namespaced bool) error {
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return err
	}
	if namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace(cmp.Or(r.Namespace, "default"))
	}
	if len(strict) == 0 {
		return nil
	}
	msgs := make([]string, len(strict))
	for i, e := range strict {
		msgs[i] = e.Error()
	}
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Errorf("%s: %s (strict decoding, as the API server's field validation)", name, strings.Join(msgs, "; "))
}

// decodeAs returns a function that decodes JSON into a new T and appends it
// to the slice field returns, or replaces an object of the same namespace
// and name loaded before.
func decodeAs[T any, PT interface {
	*T
	metav1.Object
}](field func(*Resources) *[]*T) func(*Resources, []byte, bool) error {
	return func(r *Resources, js []byte, namespaced bool) error {
		obj := PT(new(T))
		if err := r.decode(js, obj, namespaced); err != nil {
			return err
		}
		p := field(r)
		kind := fmt.Sprintf("%T", obj)
		key := kind[strings.LastIndexByte(kind, '.')+1:] + " " + obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			key = kind[strings.LastIndexByte(kind, '.')+1:] + " " + ns + "/" + obj.GetName()
		}
		if r.loaded == nil {
			r.loaded = map[string]int{}
		}
		if i, dup := r.loaded[key]; dup {
			(*p)[i] = (*T)(obj)
			r.Replaced = append(r.Replaced, key)
			return nil
		}
		r.loaded[key] = len(*p)
		*p = append(*p, (*T)(obj))
		return nil
	}
}

func versions(vs ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// decoders are keyed by "Kind.group" (GroupKind's String form). The Gateway
// API's served versions share one schema per kind, so each decodes into the
// type of its newest version.
var decoders = map[string]decoder{
	"GatewayClass.gateway.networking.k8s.io": {versions("v1", "v1beta1"),
		decodeAs(func(r *Resources) *[]*gatewayv1.GatewayClass { return &r.GatewayClasses }), true},
	"Gateway.gateway.networking.k8s.io": {versions("v1", "v1beta1"),
		decodeAs(func(r *Resources) *[]*gatewayv1.Gateway { return &r.Gateways }), false},
	"HTTPRoute.gateway.networking.k8s.io": {versions("v1", "v1beta1"),
		decodeAs(func(r *Resources) *[]*gatewayv1.HTTPRoute { return &r.HTTPRoutes }), false},
	"GRPCRoute.gateway.networking.k8s.io": {versions("v1", "v1alpha2"),
		decodeAs(func(r *Resources) *[]*gatewayv1.GRPCRoute { return &r.GRPCRoutes }), false},
	"TLSRoute.gateway.networking.k8s.io": {versions("v1", "v1alpha2", "v1alpha3"),
		decodeAs(func(r *Resources) *[]*gatewayv1.TLSRoute { return &r.TLSRoutes }), false},
	"TCPRoute.gateway.networking.k8s.io": {versions("v1", "v1alpha2"),
		decodeAs(func(r *Resources) *[]*gatewayv1.TCPRoute { return &r.TCPRoutes }), false},
	"UDPRoute.gateway.networking.k8s.io": {versions("v1", "v1alpha2"),
		decodeAs(func(r *Resources) *[]*gatewayv1.UDPRoute { return &r.UDPRoutes }), false},
	"Ingress.networking.k8s.io": {versions("v1"),
		decodeAs(func(r *Resources) *[]*networkingv1.Ingress { return &r.Ingresses }), false},
	"IngressClass.networking.k8s.io": {versions("v1"),
		decodeAs(func(r *Resources) *[]*networkingv1.IngressClass { return &r.IngressClasses }), true},
	"ListenerSet.gateway.networking.k8s.io": {versions("v1"),
		decodeAs(func(r *Resources) *[]*gatewayv1.ListenerSet { return &r.ListenerSets }), false},
	"ReferenceGrant.gateway.networking.k8s.io": {versions("v1beta1", "v1alpha2", "v1"),
		decodeAs(func(r *Resources) *[]*gatewayv1beta1.ReferenceGrant { return &r.ReferenceGrants }), false},
	"BackendTLSPolicy.gateway.networking.k8s.io": {versions("v1", "v1alpha3"),
		decodeAs(func(r *Resources) *[]*gatewayv1.BackendTLSPolicy { return &r.BackendTLSPolicies }), false},
	"XBackendTrafficPolicy.gateway.networking.x-k8s.io": {versions("v1alpha1"),
		decodeAs(func(r *Resources) *[]*gatewayxv1alpha1.XBackendTrafficPolicy { return &r.BackendTrafficPolicies }), false},
	"XBackend.gateway.networking.x-k8s.io": {versions("v1alpha1"),
		decodeAs(func(r *Resources) *[]*gatewayxv1alpha1.XBackend { return &r.Backends }), false},
	"Service": {versions("v1"),
		decodeAs(func(r *Resources) *[]*corev1.Service { return &r.Services }), false},
	"EndpointSlice.discovery.k8s.io": {versions("v1"),
		decodeAs(func(r *Resources) *[]*discoveryv1.EndpointSlice { return &r.EndpointSlices }), false},
	"Secret": {versions("v1"), decodeSecret, false},
	"ConfigMap": {versions("v1"),
		decodeAs(func(r *Resources) *[]*corev1.ConfigMap { return &r.ConfigMaps }), false},
	"ContourDeployment.isobar.dev": {versions("v1alpha1"),
		decodeAs(func(r *Resources) *[]*v1alpha1.ContourDeployment { return &r.ContourDeployments }), false},
	"HTTPProxy.projectcontour.io": {versions("v1"),
		decodeAs(func(r *Resources) *[]*contourv1.HTTPProxy { return &r.HTTPProxies }), false},
	"TLSCertificateDelegation.projectcontour.io": {versions("v1"),
		decodeAs(func(r *Resources) *[]*contourv1.TLSCertificateDelegation { return &r.TLSCertificateDelegations }), false},
	"ExtensionService.projectcontour.io": {versions("v1alpha1"),
		decodeAs(func(r *Resources) *[]*contourv1alpha1.ExtensionService { return &r.ExtensionServices }), false},
	"Namespace": {versions("v1"),
		decodeAs(func(r *Resources) *[]*corev1.Namespace { return &r.Namespaces }), true},
}

// decodeSecret merges stringData into data, as the API server does on write,
// so a Secret written by hand translates as it would in a cluster.
func decodeSecret(r *Resources, js []byte, namespaced bool) error {
	s := &corev1.Secret{}
	if err := r.decode(js, s, namespaced); err != nil {
		return err
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	r.Secrets = append(r.Secrets, s)
	return nil
}
