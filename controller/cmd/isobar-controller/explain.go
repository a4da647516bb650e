package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/envoysim"
	"isobar.dev/controller/pkg/offline"
)

// explainArgs are explain's flags.
type explainArgs struct {
	files, headers                                              stringList
	request, gateway, controllerName, namespace, client, format *string
	seed                                                        *uint64
}

func explainFlags(stderr io.Writer) (*flag.FlagSet, *explainArgs) {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := &explainArgs{}
	fs.Var(&a.files, "f", "a YAML file of Kubernetes objects, - for standard input (repeatable)")
	fs.Var(&a.headers, "H", "a request header, 'Name: value' (repeatable)")
	a.request = fs.String("request", "", "the request: '[METHOD] URL'; URL schemes http, https, tls (a TLS connection, SNI from the host), tcp, udp")
	a.gateway = fs.String("gateway", "", "the Gateway whose Envoy answers, NAMESPACE/NAME; needed when the files hold several")
	a.controllerName = fs.String("controller-name", offline.DefaultControllerName, "the GatewayClass controllerName to translate for")
	a.namespace = fs.String("namespace", "default", "the namespace of namespaced objects that name none, as kubectl's")
	a.seed = fs.Uint64("seed", 0, "picks one of weighted backends deterministically")
	a.client = fs.String("client-address", "192.0.2.1", "the IP address the request's connection comes from, which IP filters read")
	a.format = fs.String("o", "text", "output format: text, yaml or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: isobar-controller explain -f FILE... --request '[METHOD] URL' [-H 'Name: value']... [flags]\n\n"+
			"Answers what the Gateway's Envoy does with a request, by simulating Envoy on the translated configuration.\n"+
			"A Gateway listener port below 1024 is served on Envoy's mapped port, as the fleet's Service does.\n\n")
		fs.PrintDefaults()
	}
	return fs, a
}

// explain translates files as translate does and asks the simulator what
// Envoy does with one request.
func explain(args []string, stdout, stderr io.Writer) int {
	fs, a := explainFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files, headers, request, gateway, controllerName, namespace, seed, client, format := a.files, a.headers, a.request, a.gateway, a.controllerName, a.namespace, a.seed, a.client, a.format
	if len(files) == 0 || *request == "" {
		fmt.Fprintln(stderr, "explain: give -f FILE and --request")
		return 2
	}
	req, gatewayPort, err := parseRequest(*request, headers)
	if err != nil {
		fmt.Fprintln(stderr, "explain:", err)
		return 2
	}
	req.Seed, req.ClientAddress = *seed, *client
	var gateways []string
	if *gateway != "" {
		gateways = []string{*gateway}
	}
	result, code := translateFiles("explain", files, gateways, *controllerName, *namespace, false, stderr)
	if result == nil {
		return code
	}
	switch n := len(result.XDS); {
	case n == 0 && len(gateways) > 0:
		return code
	case n == 0:
		fmt.Fprintf(stderr, "explain: no Gateway of a GatewayClass with controllerName %s\n", *controllerName)
		return 1
	case n > 1:
		fmt.Fprintln(stderr, "explain: the files hold several Gateways; choose one with --gateway NAMESPACE/NAME")
		return 2
	}
	x := result.XDS[0]
	sim, err := envoysim.New(x.Listeners, x.Routes, x.Clusters, x.Endpoints, x.Secrets)
	if err != nil {
		fmt.Fprintln(stderr, "explain:", err)
		return 1
	}
	answer, err := sim.Simulate(req)
	if errors.Is(err, envoysim.ErrNoListener) {
		// Envoy's port is the operator's mapping of the Gateway's: say it
		// as the user wrote the Gateway.
		fmt.Fprintf(stderr, "explain: Gateway %s has no %s listener on port %d; the connection is refused. Its listeners: %s\n",
			result.Gateways.Gateways[0].Name, map[bool]string{false: "TCP", true: "UDP"}[req.UDP], gatewayPort, listenersOf(result, result.Gateways.Gateways[0].Name))
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "explain:", err)
		return 1
	}
	switch *format {
	case "json", "yaml":
		out, err := json.MarshalIndent(answer, "", "  ")
		if err == nil && *format == "yaml" {
			out, err = yaml.JSONToYAML(out)
		}
		if err != nil {
			fmt.Fprintln(stderr, "explain:", err)
			return 1
		}
		_, _ = stdout.Write(append(out, '\n'))
	case "text":
		g := result.Gateways.Gateways[0].Name
		fmt.Fprintf(stdout, "Gateway %s, port %d (Envoy listens on %d)\n", g, gatewayPort, req.Port)
		writeAnswer(stdout, answer)
		for _, reason := range why(result, g, req.Authority, answer) {
			fmt.Fprintf(stdout, "why: %s\n", reason)
		}
	default:
		fmt.Fprintf(stderr, "explain: -o %q: want text, yaml or json\n", *format)
		return 2
	}
	return code
}

// parseRequest reads "[METHOD] URL" and headers into a simulator request
// on Envoy's port for the URL's port.
func parseRequest(s string, headers []string) (envoysim.Request, int32, error) {
	method, rawURL, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok {
		method, rawURL = "GET", method
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Host == "" {
		return envoysim.Request{}, 0, fmt.Errorf("--request %q: want [METHOD] URL with a host", s)
	}
	defaults := map[string]int32{"http": 80, "https": 443, "tls": 443}
	port := defaults[u.Scheme]
	if p := u.Port(); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return envoysim.Request{}, 0, fmt.Errorf("--request: bad port %q", p)
		}
		port = int32(n)
	}
	if port == 0 {
		return envoysim.Request{}, 0, fmt.Errorf("--request: a %s URL needs a port", u.Scheme)
	}
	req := envoysim.Request{Port: uint32(ports.ContainerPort(port))}
	switch u.Scheme {
	case "http", "https":
		req.Method, req.Scheme, req.Authority, req.Path = strings.ToUpper(method), u.Scheme, u.Host, u.RequestURI()
		if u.Scheme == "https" {
			req.TLS, req.SNI, req.ALPN = true, u.Hostname(), []string{"h2", "http/1.1"}
		}
	case "tls":
		req.TLS, req.SNI = true, u.Hostname()
	case "tcp":
	case "udp":
		req.UDP = true
	default:
		return envoysim.Request{}, 0, fmt.Errorf("--request: scheme %q: want http, https, tls, tcp or udp", u.Scheme)
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return envoysim.Request{}, 0, fmt.Errorf("-H %q: want 'Name: value'", h)
		}
		req.Headers = append(req.Headers, envoysim.Header{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
	}
	return req, port, nil
}

// writeAnswer prints an answer for a person, naming the Gateway API
// objects behind Isobar's Envoy names.
func writeAnswer(w io.Writer, a *envoysim.Answer) {
	fmt.Fprintf(w, "listener %s, filter chain %s, %s\n", a.Listener, a.FilterChain, a.Filter)
	if len(a.DownstreamTLS) > 0 {
		fmt.Fprintf(w, "  TLS terminated with %s\n", strings.Join(a.DownstreamTLS, ", "))
	}
	if a.ClientCertificate != "" {
		fmt.Fprintf(w, "  client certificate %s (the Gateway's spec.tls.frontend)\n", a.ClientCertificate)
	}
	if a.VirtualHost != "" {
		fmt.Fprintf(w, "virtual host %s of route configuration %s\n", a.VirtualHost, a.RouteConfiguration)
	}
	if a.Route != "" {
		fmt.Fprintf(w, "route #%d %s%s\n", a.RouteIndex, a.Route, routeSource(a.Route))
	}
	// The checks Envoy makes before it acts on the route, in its order.
	if j := a.JWT; j != nil {
		fmt.Fprintf(w, "JWT: Envoy verifies the request's token for provider %s (issuer %s, keys from %s); without a valid one it answers 401\n", j.Provider, j.Issuer, j.URI)
	}
	if z := a.Authorization; z != nil {
		over, closed := "HTTP", "if it cannot be asked, Envoy answers 403"
		if z.GRPC {
			over = "gRPC"
		}
		if z.FailOpen {
			closed = "if it cannot be asked, the request goes on (fails open)"
		}
		fmt.Fprintf(w, "external authorization: Envoy asks %s%s over %s first; its refusal is the answer; %s\n", z.Server.Cluster, serviceOf(z.Server.Cluster), over, closed)
	}
	if r := a.Response; r != nil {
		fmt.Fprintf(w, "Envoy answers %d", r.Status)
		if r.Body != "" {
			fmt.Fprintf(w, " %q", r.Body)
		}
		if r.Details != "" {
			fmt.Fprintf(w, " (%s)", r.Details)
		}
		fmt.Fprintln(w)
		for _, h := range r.Headers {
			fmt.Fprintf(w, "  %s: %s\n", h.Name, h.Value)
		}
	}
	for _, b := range a.Backends {
		picked := ""
		if a.Upstream != nil && a.Upstream.Cluster == b.Cluster {
			picked = " <- this request"
		}
		fmt.Fprintf(w, "backend cluster %s%s, weight %d of %d%s\n", b.Cluster, serviceOf(b.Cluster), b.Weight, b.TotalWeight, picked)
		switch {
		case b.Status != 0:
			fmt.Fprintf(w, "  Envoy answers %d (no endpoints or no such cluster)\n", b.Status)
		case len(b.Endpoints) == 0:
			fmt.Fprintln(w, "  no endpoints: Envoy closes the connection")
		default:
			fmt.Fprintf(w, "  endpoints %s\n", strings.Join(b.Endpoints, ", "))
		}
		if b.TLS != nil {
			fmt.Fprintf(w, "  TLS to the backend: SNI %s, validated with %s %v\n", b.TLS.SNI, b.TLS.ValidationContext, b.TLS.SubjectAltNames)
		}
		if r := b.Request; r != nil && b.Status == 0 {
			fmt.Fprintf(w, "  upstream request: %s %s://%s%s\n", r.Method, r.Scheme, r.Authority, r.Path)
			for _, h := range r.Headers {
				fmt.Fprintf(w, "    %s: %s\n", h.Name, h.Value)
			}
		}
		if len(b.ResponseHeaders) > 0 {
			fmt.Fprintln(w, "  response headers added:")
			for _, h := range b.ResponseHeaders {
				fmt.Fprintf(w, "    %s: %s\n", h.Name, h.Value)
			}
		}
	}
	for _, m := range a.Mirrors {
		fmt.Fprintf(w, "mirrored to %s%s for %.4g%% of requests\n", m.Cluster, serviceOf(m.Cluster), m.Fraction*100)
	}
	for _, line := range []struct{ k, v string }{{"timeout", a.Timeout}, {"retries", a.Retry}, {"upgrades", strings.Join(a.Upgrades, ", ")}} {
		if line.v != "" {
			fmt.Fprintf(w, "%s: %s\n", line.k, line.v)
		}
	}
	if a.CORS {
		fmt.Fprintln(w, "CORS policy applies")
	}
}

// routeSource reads the route name Isobar gives Envoy routes,
// "<kind>/<namespace>/<name>/rule/<i>[:<rule name>]/match/<j>", back into
// the rule.
func routeSource(name string) string {
	p := strings.Split(name, "/")
	key, ok := routeKey(name)
	if len(p) != 7 || p[3] != "rule" || p[5] != "match" || !ok {
		return ""
	}
	rule := p[4]
	if i, ruleName, named := strings.Cut(rule, ":"); named {
		rule = fmt.Sprintf("%s (%s)", i, ruleName)
	}
	if key.Kind == "Ingress" {
		// Rule i is the Ingress's i-th host, match j its j-th path (the
		// default backend last).
		return fmt.Sprintf(" (Ingress %s/%s, host %s, path %s)", key.Namespace, key.Name, rule, p[6])
	}
	if key.Kind == "HTTPProxy" {
		// Rule i is the proxy's i-th route (or include, or redirect).
		return fmt.Sprintf(" (HTTPProxy %s/%s, route %s)", key.Namespace, key.Name, rule)
	}
	return fmt.Sprintf(" (%s %s/%s, rule %s, match %s)", key.Kind, key.Namespace, key.Name, rule, p[6])
}

// serviceOf reads a cluster name, "<namespace>/<service>/<port>", back into
// the Service.
func serviceOf(cluster string) string {
	p := strings.Split(cluster, "/")
	if len(p) < 3 || p[0] == "isobar" {
		return ""
	}
	return fmt.Sprintf(" (Service %s/%s port %s)", p[0], p[1], p[2])
}

// listenersOf lists the listeners of the Gateway named "namespace/name"
// as its spec has them: "name (PROTOCOL port)".
func listenersOf(result *offline.Result, gateway string) string {
	var out []string
	for _, gw := range result.Input.Gateways {
		if gw.Namespace+"/"+gw.Name != gateway {
			continue
		}
		for _, l := range gw.Spec.Listeners {
			out = append(out, fmt.Sprintf("%s (%s %d)", l.Name, l.Protocol, l.Port))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
