package resources

import (
	"strings"
	"testing"
)

// Contour's CRD defaults apply offline as the API server applies them: a
// field left out gets its default where its parent object is present, and
// a value that is written, even false, stays.
func TestContourDefaults(t *testing.T) {
	const proxy = `apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: default}
spec:
  virtualhost:
    fqdn: a.example.com
    rateLimitPolicy:
      global:
        descriptors:
        - entries:
          - requestHeaderValueMatch: {headers: [{name: x-a, present: true}], value: a}
          - requestHeaderValueMatch: {headers: [{name: x-b, present: true}], value: b, expectMatch: false}
  routes:
  - services: [{name: app, port: 80, weight: 1234567890123}]
    requestRedirectPolicy: {}
`
	r := &Resources{}
	if _, err := r.Load("proxy.yaml", strings.NewReader(proxy)); err != nil {
		t.Fatal(err)
	}
	if len(r.HTTPProxies) != 1 {
		t.Fatalf("loaded %d HTTPProxies", len(r.HTTPProxies))
	}
	p := r.HTTPProxies[0]
	entries := p.Spec.VirtualHost.RateLimitPolicy.Global.Descriptors[0].Entries
	if !entries[0].RequestHeaderValueMatch.ExpectMatch {
		t.Error("an omitted expectMatch is false, want the CRD's default, true")
	}
	if entries[1].RequestHeaderValueMatch.ExpectMatch {
		t.Error("expectMatch: false became true")
	}
	if got := p.Spec.Routes[0].RequestRedirectPolicy.StatusCode; got == nil || *got != 302 {
		t.Errorf("requestRedirectPolicy.statusCode %v, want the CRD's default 302", got)
	}
	if p.Spec.Routes[0].RetryPolicy != nil {
		t.Errorf("retryPolicy %+v appeared: a default applies only within an object that is present", p.Spec.Routes[0].RetryPolicy)
	}
	if got := p.Spec.Routes[0].Services[0].Weight; got != 1234567890123 {
		t.Errorf("weight %d, want the number as written", got)
	}
}
