package serve

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/go-logr/logr"
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/served"
)

// gatewayKinds are the Gateway API kinds translation reads, each at the one
// version the controller watches: the newest, which both channels of the
// pinned release serve. A cluster may have installed only some of their
// CRDs, or those of an older release; such a kind is not watched.
var gatewayKinds = []client.Object{
	&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}, &gatewayv1.GRPCRoute{},
	&gatewayv1.TLSRoute{}, &gatewayv1.TCPRoute{}, &gatewayv1.UDPRoute{}, &gatewayv1.ListenerSet{},
	&gatewayv1beta1.ReferenceGrant{}, &gatewayv1.BackendTLSPolicy{}, &gatewayxv1alpha1.XBackendTrafficPolicy{},
	&gatewayxv1alpha1.XBackend{},
}

// contourKinds are Contour's kinds translation reads (HTTPProxy, and the
// ExtensionServices proxies authorize with). Their CRDs are optional too:
// without them the controller serves the Gateway API and Ingress, and it
// restarts to watch them once they are installed.
var contourKinds = []client.Object{&contourv1.HTTPProxy{}, &contourv1.TLSCertificateDelegation{}, &contourv1alpha1.ExtensionService{}}

// optionalKinds are the kinds watched only when served.
var optionalKinds = slices.Concat(gatewayKinds, contourKinds)

// kindSet is the set of optionalKinds the API server serves at the
// versions the controller reads, by kind name (their names are distinct).
type kindSet map[string]bool

// served reports whether obj's type is served; types outside
// optionalKinds (Kubernetes' own) always are.
func (s kindSet) served(obj client.Object) bool {
	name := typeName(obj)
	for _, k := range optionalKinds {
		if typeName(k) == name {
			return s[name]
		}
	}
	return true
}

// unserved lists the gatewayKinds the API server does not serve, sorted.
func (s kindSet) unserved() []gatewayv1.Kind {
	var out []gatewayv1.Kind
	for _, k := range gatewayKinds {
		if name := typeName(k); !s[name] {
			out = append(out, gatewayv1.Kind(name))
		}
	}
	slices.Sort(out)
	return out
}

func typeName(obj client.Object) string { return reflect.TypeOf(obj).Elem().Name() }

func optionalGVKs(s *runtime.Scheme) ([]schema.GroupVersionKind, error) {
	out := make([]schema.GroupVersionKind, len(optionalKinds))
	for i, obj := range optionalKinds {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			return nil, err
		}
		out[i] = gvk
	}
	return out, nil
}

// servedKinds asks discovery which optionalKinds the API server serves, and
// for the others why not, waiting for an API server that does not answer;
// the watch restarts the controller when that changes.
func servedKinds(ctx context.Context, log logr.Logger, dc discovery.DiscoveryInterface, s *runtime.Scheme, interval time.Duration) (kindSet, map[gatewayv1.Kind]string, *served.Watcher, error) {
	want, err := optionalGVKs(s)
	if err != nil {
		return nil, nil, nil, err
	}
	have, err := served.Await(ctx, dc, want, log)
	if err != nil {
		return nil, nil, nil, err
	}
	set, why := kindSet{}, map[gatewayv1.Kind]string{}
	for _, gvk := range want {
		set[gvk.Kind] = have[gvk]
	}
	for _, gvk := range have.Missing(want) {
		why[gatewayv1.Kind(gvk.Kind)] = served.Why(dc, gvk)
	}
	return set, why, &served.Watcher{Discovery: dc, Want: want, Have: have, Interval: interval}, nil
}
