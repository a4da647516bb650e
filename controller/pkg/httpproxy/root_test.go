package httpproxy

import (
	"fmt"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/env"
	"isobar.dev/controller/pkg/resources"
)

// A root including 1,000 proxies, one of which includes itself: every
// other proxy is valid and served under its prefix, the one in a cycle
// says so, and every proxy read is recorded for the engine.
func TestLargeTree(t *testing.T) {
	const n = 1000
	res := &resources.Resources{Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
		Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cert"}}}}
	root := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "root"}, Spec: contourv1.HTTPProxySpec{VirtualHost: &contourv1.VirtualHost{Fqdn: "big.example.com"}}}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		root.Spec.Includes = append(root.Spec.Includes, contourv1.Include{Name: name, Conditions: []contourv1.MatchCondition{{Prefix: "/" + name}}})
		p := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: contourv1.HTTPProxySpec{
			Routes: []contourv1.Route{{Services: []contourv1.Service{{Name: "app", Port: 80}}}},
		}}
		if i == 7 {
			p.Spec.Includes = []contourv1.Include{{Name: name, Conditions: []contourv1.MatchCondition{{Prefix: "/again"}}}}
		}
		res.HTTPProxies = append(res.HTTPProxies, p)
	}
	res.HTTPProxies = append(res.HTTPProxies, root)
	var reads env.Reads
	tree := Root(env.NewIndex(res, nil).Env(&reads), nil, root, Options{}, 0)
	if len(tree.HTTP) != n {
		t.Errorf("%d routes, want %d", len(tree.HTTP), n)
	}
	if len(tree.Statuses) != n+1 || tree.Statuses[0].Proxy.Name != "root" {
		t.Fatalf("%d statuses (first %v), want %d, the root's first", len(tree.Statuses), tree.Statuses[0].Proxy, n+1)
	}
	for _, ps := range tree.Statuses {
		st := ps.Status.HTTPProxyStatus()
		want := StatusValid
		if ps.Proxy.Name == "p7" {
			want = StatusInvalid
			if _, ok := ps.Status.Valid.GetError(contourv1.ConditionTypeIncludeError); !ok {
				t.Errorf("p7: %+v, want the include cycle", ps.Status.Valid.Errors)
			}
		}
		if st.CurrentStatus != want {
			t.Errorf("%s: %s (%s), want %s", ps.Proxy, st.CurrentStatus, st.Description, want)
		}
	}
	proxies := 0
	for _, d := range reads.Deps() {
		if d.Kind == env.HTTPProxy {
			proxies++
		}
	}
	if proxies != n {
		t.Errorf("%d HTTPProxy reads recorded, want %d", proxies, n)
	}
}

// The profile's settings: a root outside rootNamespaces is invalid, and
// disablePermitInsecure redirects a TLS virtual host's plain HTTP requests
// whatever the route says.
func TestSettings(t *testing.T) {
	res := &resources.Resources{Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
		Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cert"}}}}
	root := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "www"}, Spec: contourv1.HTTPProxySpec{
		VirtualHost: &contourv1.VirtualHost{Fqdn: "www.example.com", TLS: &contourv1.TLS{SecretName: "cert"}},
		Routes:      []contourv1.Route{{PermitInsecure: true, Services: []contourv1.Service{{Name: "app", Port: 80}}}},
	}}
	translate := func(opts Options) *Tree {
		var reads env.Reads
		return Root(env.NewIndex(res, nil).Env(&reads), nil, root, opts, 443)
	}
	if tree := translate(Options{RootNamespaces: []string{"platform"}}); len(tree.HTTP) != 0 ||
		tree.Statuses[0].Status.Valid.Errors[0].Reason != "RootProxyNotAllowedInNamespace" {
		t.Errorf("a root outside rootNamespaces: %d routes, %+v", len(tree.HTTP), tree.Statuses[0].Status.Valid.Errors)
	}
	if tree := translate(Options{RootNamespaces: []string{"team"}}); len(tree.HTTP) != 1 || tree.HTTP[0].Redirect != nil {
		t.Errorf("permitInsecure: the HTTP route is %+v, want the route itself", tree.HTTP)
	}
	if tree := translate(Options{DisablePermitInsecure: true}); len(tree.HTTP) != 1 || tree.HTTP[0].Redirect == nil {
		t.Errorf("disablePermitInsecure: the HTTP route is %+v, want a redirect", tree.HTTP)
	}
}
