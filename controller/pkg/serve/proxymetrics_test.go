package serve

import (
	"maps"
	"testing"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/translate/httpproxies"
)

// The gauges count served HTTPProxies as Contour's do, and a namespace
// whose proxies are gone leaves them.
func TestProxyGauges(t *testing.T) {
	proxy := func(ns, name, fqdn string) *contourv1.HTTPProxy {
		p := &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if fqdn != "" {
			p.Spec.VirtualHost = &contourv1.VirtualHost{Fqdn: fqdn}
		}
		return p
	}
	status := func(s string) *httpproxies.Status {
		return &httpproxies.Status{Status: contourv1.HTTPProxyStatus{CurrentStatus: s}}
	}
	proxies := []*contourv1.HTTPProxy{
		proxy("shop", "root", "shop.example.com"), proxy("shop", "child", ""), proxy("shop", "lost", ""),
		proxy("blog", "root", "blog.example.com"), proxy("blog", "broken", "broken.example.com"), proxy("other", "unserved", "x.example.com"),
	}
	statuses := map[types.NamespacedName]*httpproxies.Status{
		{Namespace: "shop", Name: "root"}: status("valid"), {Namespace: "shop", Name: "child"}: status("valid"), {Namespace: "shop", Name: "lost"}: status("orphaned"),
		{Namespace: "blog", Name: "root"}: status("valid"), {Namespace: "blog", Name: "broken"}: status("invalid"),
	}
	c := countProxies(statuses, proxies)
	if want := map[string]int{"shop": 3, "blog": 2}; !maps.Equal(c.total, want) {
		t.Errorf("total %v, want %v", c.total, want)
	}
	if want := map[string]int{"shop": 1, "blog": 2}; !maps.Equal(c.roots, want) {
		t.Errorf("roots %v, want %v", c.roots, want)
	}
	if want := map[string]int{"shop": 1}; !maps.Equal(c.orphaned, want) {
		t.Errorf("orphaned %v, want %v", c.orphaned, want)
	}
	if want := map[[2]string]int{{"shop", "shop.example.com"}: 1, {"shop", ""}: 1, {"blog", "blog.example.com"}: 1}; !maps.Equal(c.valid, want) {
		t.Errorf("valid %v, want %v", c.valid, want)
	}
	if want := map[[2]string]int{{"blog", "broken.example.com"}: 1}; !maps.Equal(c.invalid, want) {
		t.Errorf("invalid %v, want %v", c.invalid, want)
	}

	var g proxyGauges
	g.set(c)
	if got := testutil.ToFloat64(proxyTotal.WithLabelValues("shop")); got != 3 {
		t.Errorf("contour_httpproxy{namespace=shop} = %v, want 3", got)
	}
	delete(statuses, types.NamespacedName{Namespace: "blog", Name: "root"})
	delete(statuses, types.NamespacedName{Namespace: "blog", Name: "broken"})
	g.set(countProxies(statuses, proxies))
	if n := testutil.CollectAndCount(proxyTotal); n != 1 {
		t.Errorf("contour_httpproxy has %d series after blog's proxies went, want shop's alone", n)
	}
	if n := testutil.CollectAndCount(proxyInvalid); n != 0 {
		t.Errorf("contour_httpproxy_invalid has %d series, want none", n)
	}
}
