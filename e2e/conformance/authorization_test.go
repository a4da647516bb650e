package conformance

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"isobar.dev/e2e/rig"
)

// HTTPProxy external authorization through a provisioned fleet: the
// fleet's Envoy asks a real gRPC authorization server, running as a Pod
// behind an ExtensionService, about each request of a TLS virtual host.
// Allowed requests reach the echo Pod with the server's headers and the
// route's context; denied ones get the server's answer; a route whose
// check is disabled is not checked; a server without Pods denies (403)
// unless failOpen; an ExtensionService that does not exist is an error on
// the proxy's status. The ExtensionService's status says it is valid.
func TestHTTPProxyAuthorizationThroughFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	r := rig.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns, class = "authorized-proxies", "isobar-authorized"
	root := func(name, extension string, failOpen bool, routes []contourv1.Route) *contourv1.HTTPProxy {
		return &contourv1.HTTPProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: contourv1.HTTPProxySpec{
			IngressClassName: class, Routes: routes,
			VirtualHost: &contourv1.VirtualHost{Fqdn: name + ".example.com", TLS: &contourv1.TLS{SecretName: "example-tls"},
				Authorization: &contourv1.AuthorizationServer{
					ExtensionServiceRef: contourv1.ExtensionServiceReference{Name: extension}, FailOpen: failOpen, ResponseTimeout: "2s",
					AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"team": "shop", "tier": "web"}},
				}},
		}}
	}
	extension := func(name, service string) *contourv1alpha1.ExtensionService {
		return &contourv1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: contourv1alpha1.ExtensionServiceSpec{
			Protocol: ptr.To("h2c"), Services: []contourv1alpha1.ExtensionServiceTarget{{Name: service, Port: 9000}},
		}}
	}
	objects := slices.Concat(tlsGateway(t, ns, class),
		// The authorization server, and a Service without Pods: one that
		// is down.
		serverWorkload(ns, "authz", rig.AuthzImage, "grpc", 9000),
		[]client.Object{podlessService(ns, "nobody", "grpc", 9000),
			extension("authz", "authz"),
			extension("down", "nobody"),
			root("shop", "authz", false, []contourv1.Route{
				{Services: echo()},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, Services: echo(), AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/admin"}}, Services: echo(), AuthPolicy: &contourv1.AuthorizationPolicy{Context: map[string]string{"tier": "admin"}}},
			}),
			root("closed", "down", false, []contourv1.Route{{Services: echo()}}),
			root("open", "down", true, []contourv1.Route{{Services: echo()}}),
			root("missing", "gone", false, []contourv1.Route{
				{Services: echo()},
				{Conditions: []contourv1.MatchCondition{{Prefix: "/public"}}, Services: echo(), AuthPolicy: &contourv1.AuthorizationPolicy{Disabled: true}},
			}),
		}, echoWorkload(ns, 1))
	for _, o := range objects {
		if err := r.Env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	address := gatewayAddress(t, ctx, r, types.NamespacedName{Namespace: ns, Name: "web"})
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		t.Fatal(err)
	}
	address = net.JoinHostPort(host, "443")
	get := func(host, path, user string) echoed {
		return tlsGet(ctx, address, host+".example.com", path, user)
	}

	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		got := get("shop", "/", "alice")
		if got.status == http.StatusOK && got.Pod != "" {
			break
		}
		if time.Now().After(deadline) {
			p := &contourv1.HTTPProxy{}
			_ = r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, p)
			t.Fatalf("GET https://shop.example.com/ as alice: %d %q from %q in two minutes, want 200 from an echo Pod once the server allows it; the proxy's status: %+v", got.status, got.body, got.Pod, p.Status)
		}
	}
	for _, tc := range []struct {
		host, path, user string
		status           int
		// reached says the echo Pod answered; then user and context are
		// the headers it got from the server.
		reached                     bool
		authUser, authContext, body string
	}{
		{host: "shop", path: "/", user: "alice", status: 200, reached: true, authUser: "alice (grpc)", authContext: "team=shop,tier=web"},
		{host: "shop", path: "/admin", user: "alice", status: 200, reached: true, authUser: "alice (grpc)", authContext: "team=shop,tier=admin"},
		{host: "shop", path: "/", user: "bob", status: 401, body: "who are you?"},
		{host: "shop", path: "/public", user: "bob", status: 200, reached: true},
		{host: "closed", path: "/", user: "alice", status: 403},
		{host: "open", path: "/", user: "bob", status: 200, reached: true},
		{host: "missing", path: "/", user: "alice", status: 403},
		{host: "missing", path: "/public", user: "bob", status: 200, reached: true},
	} {
		got := get(tc.host, tc.path, tc.user)
		what := "GET https://" + tc.host + ".example.com" + tc.path + " as " + tc.user
		if got.status != tc.status || (got.Pod != "") != tc.reached {
			t.Errorf("%s: %d from %q, want %d (from an echo Pod: %v)", what, got.status, got.Pod, tc.status, tc.reached)
			continue
		}
		if tc.body != "" && got.body != tc.body {
			t.Errorf("%s: body %q, want the server's %q", what, got.body, tc.body)
		}
		if h := got.Headers; tc.reached && (first(h["X-Auth-User"]) != tc.authUser || first(h["X-Auth-Context"]) != tc.authContext) {
			t.Errorf("%s: the backend got x-auth-user %q and x-auth-context %q, want %q and %q", what, h["X-Auth-User"], h["X-Auth-Context"], tc.authUser, tc.authContext)
		}
	}

	// Status: the ExtensionService is valid; a proxy naming one that does
	// not exist says so.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		x := &contourv1alpha1.ExtensionService{}
		p := &contourv1.HTTPProxy{}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "authz"}, x); err != nil {
			t.Fatal(err)
		}
		if err := r.Env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "missing"}, p); err != nil {
			t.Fatal(err)
		}
		valid := len(x.Status.Conditions) == 1 && x.Status.Conditions[0].Status == contourv1.ConditionTrue
		var errs []contourv1.SubCondition
		if len(p.Status.Conditions) == 1 {
			errs = p.Status.Conditions[0].Errors
		}
		said := len(errs) == 1 && errs[0].Reason == "ExtensionServiceNotUsable" && strings.Contains(errs[0].Message, `"`+ns+`/gone" not found`)
		if valid && said {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in a minute: ExtensionService status %+v (want Valid True); HTTPProxy missing errors %+v (want ExtensionServiceNotUsable, not found)", x.Status, errs)
		}
	}
}

// echoed is an answer through the Gateway: its status and body, and when
// an echo Pod answered, what it echoes of the request (decoded from the
// fields of that name).
type echoed struct {
	status  int
	body    string
	Pod     string              `json:"pod"`
	Headers map[string][]string `json:"headers"`
}

// tlsGet sends a GET over TLS to the Gateway at address, for host (the
// server name too), with a bearer token for user (authzserver allows
// alice's).
func tlsGet(ctx context.Context, address, host, path, user string) echoed {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}, // the fleet's certificate is the test's own
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, address)
		},
	}}
	defer client.CloseIdleConnections()
	return getAs(ctx, client, "https://"+host+path, host, user)
}

// plainGet sends a GET over plain HTTP to the Gateway at address, for
// host, with a bearer token for user.
func plainGet(ctx context.Context, address, host, path, user string) echoed {
	return getAs(ctx, http.DefaultClient, "http://"+address+path, host, user)
}

// getAs sends a GET of url for host with a bearer token for user, and
// decodes what an echo Pod says of it.
func getAs(ctx context.Context, client *http.Client, url, host, user string) echoed {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return echoed{}
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+user)
	resp, err := client.Do(req)
	if err != nil {
		return echoed{body: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := echoed{status: resp.StatusCode, body: string(body)}
	_ = json.Unmarshal(body, &out)
	return out
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
