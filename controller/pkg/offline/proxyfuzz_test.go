package offline

import (
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	kptr "k8s.io/utils/ptr"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/resources"
)

// FuzzHTTPProxy varies the user-controlled strings and numbers of a root
// HTTPProxy and the proxy it includes (conditions, negated ones too,
// rewrites, redirects, retries, timeouts, mirrors, global rate limit
// descriptors, authorization context), and of the ExtensionService the
// root and the profile's rate limit service use, which the CRD's schema
// would check only in part: nothing may panic, what translates passes the Envoy
// checks and the simulator, and an incremental translation that sees the
// included proxy arrive gives what a fresh one does.
func FuzzHTTPProxy(f *testing.F) {
	f.Add("app.example.com", "/api", "/v1", "x-version", "2", "^/v[0-9]+", "debug", "30s", "/new", int64(1), 200)
	f.Add("app.example.com", "/api", "/v1", "x-version", "2", "/v[0-9]+", "v4", "30s", "/new", int64(80), 200)
	f.Add("", "", "", "", "", "", "", "", "", int64(0), 0)
	f.Add("*.example.com", "api", "//", "bad header", "\x00", "([", "q p", "forever", "no-slash", int64(-5), 99)
	f.Fuzz(func(t *testing.T, fqdn, prefix, childPrefix, header, value, regex, query, timeout, path string, weight int64, status int) {
		res := proxyResources(fqdn, prefix, childPrefix, header, value, regex, query, timeout, path, weight, status)
		result, err := Translate(res, Options{})
		if err != nil {
			t.Fatalf("translation produced invalid Envoy configuration: %v", err)
		}
		simulate(t, result)
		before := *res
		before.HTTPProxies = slices.DeleteFunc(slices.Clone(res.HTTPProxies), func(p *contourv1.HTTPProxy) bool { return p.Name == "child" })
		inc := newIncremental()
		inc.check(t, "without the included proxy", &before)
		inc.check(t, "with it", res)
	})
}

func proxyResources(fqdn, prefix, childPrefix, header, value, regex, query, timeout, path string, weight int64, status int) *resources.Resources {
	res := fuzzResources("/", "x", "y", "", "q", "/", 1, 301, "", "/", "GET")
	res.HTTPRoutes = nil
	res.Gateways[0].Spec.Listeners = []gatewayv1.Listener{{Name: "ingress-http", Protocol: gatewayv1.HTTPProtocolType, Port: 80},
		{Name: "ingress-https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, TLS: &gatewayv1.ListenerTLSConfig{
			CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "tls"}}}}}
	res.Secrets = append(res.Secrets, fuzzTLSSecret())
	res.IngressClasses = []*networkingv1.IngressClass{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec: networkingv1.IngressClassSpec{Controller: string(DefaultControllerName), Parameters: &networkingv1.IngressClassParametersReference{
			APIGroup: kptr.To(gatewayv1.GroupName), Kind: "Gateway", Name: "web", Namespace: kptr.To("default"),
			Scope: kptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace),
		}},
	}}
	redirect := path
	// The profile's rate limit service, and the ExtensionService it and
	// the root's authorization use.
	res.ContourDeployments = []*v1alpha1.ContourDeployment{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "profile"},
		Spec: v1alpha1.ContourDeploymentSpec{RuntimeSettings: v1alpha1.RuntimeSettings{HTTPProxy: &v1alpha1.HTTPProxySettings{
			RateLimitService: &v1alpha1.RateLimitServiceSettings{ExtensionService: v1alpha1.ObjectReference{Namespace: "default", Name: "ext"}, Domain: value,
				DefaultGlobalRateLimitPolicy: &contourv1.GlobalRateLimitPolicy{Descriptors: []contourv1.RateLimitDescriptor{{Entries: []contourv1.RateLimitDescriptorEntry{
					{GenericKey: &contourv1.GenericKeyDescriptor{Key: header, Value: value}}}}}}},
		}}},
	}}
	res.GatewayClasses[0].Spec.ParametersRef = &gatewayv1.ParametersReference{Group: "isobar.dev", Kind: "ContourDeployment", Namespace: kptr.To(gatewayv1.Namespace("default")), Name: "profile"}
	res.ExtensionServices = []*contourv1alpha1.ExtensionService{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext", Generation: 1},
		Spec: contourv1alpha1.ExtensionServiceSpec{Protocol: kptr.To("h2c"), Services: []contourv1alpha1.ExtensionServiceTarget{{Name: "svc", Port: int(weight)}},
			TimeoutPolicy: &contourv1.TimeoutPolicy{Response: timeout}},
	}}
	res.HTTPProxies = []*contourv1.HTTPProxy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "root", Generation: 1},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: fqdn,
				RateLimitPolicy: &contourv1.RateLimitPolicy{Global: &contourv1.GlobalRateLimitPolicy{Descriptors: []contourv1.RateLimitDescriptor{{Entries: []contourv1.RateLimitDescriptorEntry{
					{RequestHeader: &contourv1.RequestHeaderDescriptor{HeaderName: header, DescriptorKey: value}},
					{RequestHeaderValueMatch: &contourv1.RequestHeaderValueMatchDescriptor{Headers: []contourv1.HeaderMatchCondition{{Name: header, Regex: regex}}, Value: value}},
				}}}}}},
			Includes: []contourv1.Include{{Name: "child", Conditions: []contourv1.MatchCondition{{Prefix: prefix}, {Header: &contourv1.HeaderMatchCondition{Name: header, Contains: value}}}}},
			Routes: []contourv1.Route{
				{Conditions: []contourv1.MatchCondition{{Regex: regex}}, Services: []contourv1.Service{{Name: "svc", Port: 80, Weight: weight}},
					TimeoutPolicy:        &contourv1.TimeoutPolicy{Response: timeout},
					RequestHeadersPolicy: &contourv1.HeadersPolicy{Set: []contourv1.HeaderValue{{Name: header, Value: value}}, Remove: []string{header}}},
				{Conditions: []contourv1.MatchCondition{{Exact: path}}, RequestRedirectPolicy: &contourv1.HTTPRequestRedirectPolicy{Path: &redirect}},
				{Conditions: []contourv1.MatchCondition{{Prefix: childPrefix}}, DirectResponsePolicy: &contourv1.HTTPDirectResponsePolicy{StatusCode: status, Body: value}},
			},
		},
	}, {
		// A TLS root, with what needs TLS: authorization and JWT
		// verification.
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "secure", Generation: 1},
		Spec: contourv1.HTTPProxySpec{
			VirtualHost: &contourv1.VirtualHost{Fqdn: "secure.example.com", TLS: &contourv1.TLS{SecretName: "tls"},
				Authorization: &contourv1.AuthorizationServer{ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: "ext"}, ResponseTimeout: timeout,
					AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{header: value}}},
				JWTProviders: []contourv1.JWTProvider{
					{Name: header, Default: weight%2 == 1, Issuer: value, Audiences: []string{query},
						RemoteJWKS: contourv1.RemoteJWKS{URI: "https://" + fqdn + path, Timeout: timeout, CacheDuration: timeout, DNSLookupFamily: []string{"", "v4", "v6", query}[weight&3]}},
					{Name: "other", RemoteJWKS: contourv1.RemoteJWKS{URI: "http://" + query + ".svc:8080" + path}},
				}},
			Includes: []contourv1.Include{{Name: "child", Conditions: []contourv1.MatchCondition{{Prefix: prefix}}}},
			Routes: []contourv1.Route{
				{Services: []contourv1.Service{{Name: "svc", Port: 80, CookieRewritePolicies: []contourv1.CookieRewritePolicy{{Name: query, DomainRewrite: &contourv1.CookieDomainRewrite{Value: value}}}}},
					JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Require: []string{header, "other", "", query}[weight&3]},
					CookieRewritePolicies: []contourv1.CookieRewritePolicy{{Name: header, PathRewrite: &contourv1.CookiePathRewrite{Value: path}, Secure: kptr.To(weight%2 == 0)}}},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/open"}}, PermitInsecure: true, Services: []contourv1.Service{{Name: "svc", Port: 80}},
					JWTVerificationPolicy: &contourv1.JWTVerificationPolicy{Disabled: true}},
			},
		},
	}, {
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "child", Generation: 1},
		Spec: contourv1.HTTPProxySpec{Routes: []contourv1.Route{{
			Conditions:        []contourv1.MatchCondition{{Prefix: childPrefix}, {QueryParameter: &contourv1.QueryParameterMatchCondition{Name: query, Prefix: value, IgnoreCase: true}}},
			Services:          []contourv1.Service{{Name: "svc", Port: 80}, {Name: "svc", Port: 80, Mirror: true, Weight: weight}},
			PathRewritePolicy: &contourv1.PathRewritePolicy{ReplacePrefix: []contourv1.ReplacePrefix{{Prefix: prefix + childPrefix, Replacement: path}, {Replacement: childPrefix}}},
			RetryPolicy:       &contourv1.RetryPolicy{NumRetries: weight, PerTryTimeout: timeout, RetriableStatusCodes: []uint32{uint32(status)}},
			TimeoutPolicy:     &contourv1.TimeoutPolicy{Idle: timeout, IdleConnection: timeout},
			RateLimitPolicy: &contourv1.RateLimitPolicy{Global: &contourv1.GlobalRateLimitPolicy{Descriptors: []contourv1.RateLimitDescriptor{{Entries: []contourv1.RateLimitDescriptorEntry{
				{GenericKey: &contourv1.GenericKeyDescriptor{Key: query, Value: path}}, {RemoteAddress: &contourv1.RemoteAddressDescriptor{}},
			}}}}},
			AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: weight%2 == 0, Context: map[string]string{query: path}},
		}, {
			Conditions:            []contourv1.MatchCondition{{Header: &contourv1.HeaderMatchCondition{Name: header, NotExact: value, TreatMissingAsEmpty: true}}},
			RequestRedirectPolicy: &contourv1.HTTPRequestRedirectPolicy{Prefix: &redirect},
		}}},
	}}
	return res
}

// fuzzTLSSecret is a certificate the fuzzed Gateway and TLS root serve:
// the httpproxy-jwt golden's, in the default namespace.
var fuzzTLSSecret = sync.OnceValue(func() *corev1.Secret {
	res, _, err := LoadFiles([]string{"testdata/httpproxy-jwt.in.yaml"}, "")
	if err != nil {
		panic(err)
	}
	for _, s := range res.Secrets {
		if s.Name == "shop-tls" {
			cp := s.DeepCopy()
			cp.Namespace, cp.Name = "default", "tls"
			return cp
		}
	}
	panic("the httpproxy-jwt golden has no Secret shop-tls")
})
