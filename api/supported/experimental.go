package supported

// Support says what Isobar does with a field.
type Support string

const (
	// Yes: the field takes effect as the Gateway API defines it.
	Yes Support = "yes"
	// Refused: a value Isobar cannot honour is refused on the status of the
	// object that uses it, with a message naming it.
	Refused Support = "refused"
	// No: not implemented yet, and not refused either. Each is a gap to
	// close.
	No Support = "no"
	// OutOfScope: a mesh field; Isobar is a Gateway.
	OutOfScope Support = "out of scope"
	// NotYet: refused on the status of the object that uses it, with a
	// message naming it, until Isobar serves it.
	NotYet Support = "not yet"
)

// FieldSupport is a field of a CRD, and what Isobar does with it. Path covers
// the leaves under it.
type FieldSupport struct {
	Kind    string
	Path    string
	Support Support
	// Note says how the field takes effect, or why it cannot.
	Note string
	// Refusal is what the refusing status message says, for Refused and
	// NotYet.
	Refusal string
	// Test is a test that shows it, besides TestEveryExperimentalField.
	Test string
}

// ExperimentalFields are the fields of the experimental channel beyond the
// standard channel's, of the Gateway API release Isobar builds against.
// TestEveryExperimentalField (e2e) walks the CRDs: a field missing here
// fails it, and so does a Yes that changes neither the xDS nor the status,
// or a Refused whose status does not say so.
var ExperimentalFields = []FieldSupport{
	{Kind: "Gateway", Path: "spec.defaultScope", Support: Yes,
		Note: "All makes the Gateway a default Gateway (GEP-3793): it takes the routes with useDefaultGateways: All, under its listeners' allowedRoutes, and has a DefaultGateway condition",
		Test: "golden default-gateways; TestIncrementalDefaultGateways; TestExperimentalChannelThroughFleet/defaultGateways"},
	{Kind: "HTTPRoute", Path: "spec.useDefaultGateways", Support: Yes,
		Note: "All attaches the route to every default Gateway, as if it named it; its status entry names the Gateway",
		Test: "golden default-gateways; TestExperimentalChannelThroughFleet/defaultGateways"},
	{Kind: "GRPCRoute", Path: "spec.useDefaultGateways", Support: Yes, Note: "as for HTTPRoute", Test: "golden default-gateways"},
	{Kind: "TLSRoute", Path: "spec.useDefaultGateways", Support: Yes, Note: "as for HTTPRoute", Test: "golden default-gateways"},
	{Kind: "TCPRoute", Path: "spec.useDefaultGateways", Support: Yes, Note: "as for HTTPRoute", Test: "golden default-gateways"},
	{Kind: "UDPRoute", Path: "spec.useDefaultGateways", Support: Yes, Note: "as for HTTPRoute", Test: "golden default-gateways"},

	{Kind: "HTTPRoute", Path: "spec.rules.sessionPersistence.type", Support: Yes,
		Note: "Cookie or Header: Envoy's stateful session filter names the session's endpoint in a cookie for the rule's path, or in a header; a session follows its endpoint while the cluster has it healthy. A rule splitting traffic has its backends as one cluster, each backend's endpoints a locality of its weight, so that a session holds across the split; such a split with a backendRef's own filters, an unresolved backendRef or backends spoken to differently is refused",
		Test: "golden session-persistence; TestExperimentalChannelThroughFleet/sessionPersistence"},
	{Kind: "HTTPRoute", Path: "spec.rules.sessionPersistence.sessionName", Support: Yes,
		Note: "the cookie's or header's name; without it, a name unique to the rule. A name that is not an HTTP token is refused",
		Test: "golden session-persistence"},
	{Kind: "HTTPRoute", Path: "spec.rules.sessionPersistence.cookieConfig.lifetimeType", Support: Yes,
		Note: "Permanent gives the cookie a Max-Age of absoluteTimeout; Session (the default) a cookie without one",
		Test: "golden session-persistence"},
	{Kind: "HTTPRoute", Path: "spec.rules.sessionPersistence.absoluteTimeout", Support: Yes,
		Note: "a Permanent cookie's Max-Age, in whole seconds. Refused for a Session cookie and a header, whose lifetime Envoy cannot enforce",
		Test: "golden session-persistence"},
	{Kind: "GRPCRoute", Path: "spec.rules.sessionPersistence", Support: Yes, Note: "as for HTTPRoute; a header session is gRPC metadata",
		Test: "golden session-persistence"},

	{Kind: "HTTPRoute", Path: "spec.rules.retry", Support: Yes,
		Note: "the features HTTPRouteRetry, HTTPRouteRetryBackendTimeout and HTTPRouteRetryConnectionError",
		Test: "the conformance suite; TestRetryOnConnectionErrorsAndBackendTimeouts"},

	{Kind: "HTTPRoute", Path: "spec.rules.filters.externalAuth", Support: Yes,
		Note: "Envoy's ext_authz asks the server about each request of the rule first, over HTTP (path prefix; host, method, path, content-length and authorization; the allowing answer's allowed headers, all without a list, go on with the request) or Envoy's gRPC protocol (every header), with the body up to forwardBody.maxSize; a denying answer is the client's, and a server that cannot be asked denies with 403. A server that does not resolve leaves the rule answering 500; a second ExternalAuth filter on a rule is refused",
		Test: "golden external-auth; TestExternalAuthorization (e2e/dataplane); TestExperimentalChannelThroughFleet/externalAuth"},
	{Kind: "HTTPRoute", Path: "spec.rules.filters.externalAuth.http.path", Support: Yes, Note: "the path prefix of HTTP checks", Test: "golden external-auth"},
	{Kind: "HTTPRoute", Path: "spec.rules.filters.externalAuth.http.allowedHeaders", Support: Yes,
		Note: "the request headers an HTTP check carries besides host, method, path, content-length and authorization (Envoy's ext_authz allowed_headers: every connection manager of the Gateway has an instance of the filter for each list its routes ask for)",
		Test: "golden external-auth"},
	{Kind: "HTTPRoute", Path: "spec.rules.filters.externalAuth.http.allowedResponseHeaders", Support: Yes, Note: "headers of an allowing answer that go on with the request", Test: "TestExternalAuthorization"},
	{Kind: "HTTPRoute", Path: "spec.rules.filters.externalAuth.forwardBody.maxSize", Support: Yes, Note: "checks carry the body up to this many bytes (cut there)", Test: "golden external-auth"},
	{Kind: "HTTPRoute", Path: "spec.rules.filters.externalAuth.grpc.allowedHeaders", Support: Yes,
		Note: "the request headers a gRPC check carries, those alone (every header without a list), as for http.allowedHeaders",
		Test: "golden external-auth"},
	{Kind: "HTTPRoute", Path: "spec.rules.backendRefs.filters.externalAuth", Support: Refused, Refusal: "filter ExternalAuth is not supported on a backendRef",
		Note: "a backendRef's ExternalAuth filter leaves the backend unresolved (ResolvedRefs False), and its share of requests answers 500"},

	{Kind: "XBackend", Path: "spec.type", Support: Yes,
		Note: "ExternalHostname: a backendRef to the XBackend (of HTTPRoute, GRPCRoute, TCPRoute; in another namespace with a ReferenceGrant) reaches a cluster of the host, which Envoy resolves itself. Each Gateway that uses it is an entry of its status, Accepted or Invalid with the reason, and an XBackend that cannot be used leaves the route's ResolvedRefs False (XBackendNotAccepted) and its share of requests answering 500",
		Test: "golden xbackend; TestExperimentalChannelThroughFleet/xbackends"},
	{Kind: "XBackend", Path: "spec.externalHostname", Support: Yes,
		Note: "the host Envoy resolves; an IP address or a .cluster.local name is refused (Invalid)", Test: "golden xbackend"},
	{Kind: "XBackend", Path: "spec.port", Support: Yes,
		Note: "the port Envoy connects to; a backendRef naming another port is not resolved (BackendNotFound)", Test: "golden xbackend"},
	{Kind: "XBackend", Path: "spec.protocol", Support: Yes,
		Note: "HTTP and HTTP11 speak HTTP/1.1 (Envoy's choice for HTTP), HTTP2, H2C and GRPC HTTP/2 (over TLS when tls says), TCP a TCPRoute's connection; unset, as the route speaks (HTTP/1.1, HTTP/2 for gRPC). MCP, and a protocol the route cannot speak, are refused (UnsupportedProtocol); H2C with TLS is Invalid",
		Test: "golden xbackend"},
	{Kind: "XBackend", Path: "spec.tls", Support: Yes,
		Note: "ServerOnly and ClientAndServer make Envoy speak TLS to the host, verified as validation says; None, cleartext. A TLSRoute, which passes the client's TLS through, refuses an XBackend with TLS",
		Test: "golden xbackend"},
	{Kind: "XBackend", Path: "spec.tls.validation", Support: Yes,
		Note: "as a BackendTLSPolicy's validation (CA ConfigMaps or Secrets of the XBackend's namespace, or the system bundle; the SNI; subject alternative names); without a CA the system bundle, and without a hostname the external hostname, are used. A CA that does not resolve makes the XBackend Invalid",
		Test: "golden xbackend"},
	{Kind: "XBackend", Path: "spec.tls.clientCertificateRef", Support: Yes,
		Note: "the certificate Envoy presents in mode ClientAndServer (another namespace's needs a ReferenceGrant there); in mode ServerOnly Envoy presents the Gateway's spec.tls.backend certificate, as to BackendTLSPolicy backends",
		Test: "golden xbackend"},
	{Kind: "XBackendTrafficPolicy", Path: "spec.targetRefs", Support: Yes,
		Note: "the core Services the policy applies to: every cluster of each; of two policies for one Service the older applies and the newer is Conflicted; another kind is refused (Invalid). Each Gateway whose routes use the Service is an ancestor in the policy's status; when a route names the Service and it does not exist, the policy is not accepted there (TargetNotFound)",
		Test: "golden backend-traffic"},
	{Kind: "XBackendTrafficPolicy", Path: "spec.retryConstraint", Support: Yes,
		Note: "Envoy's retry budget on the Service's clusters: retries at once up to budget.percent of the requests started in the last budget.interval, never fewer than minRetryRate allows, which Envoy keeps as retries in flight (count×1s/interval, at least one) rather than a rate; a retry over the budget is not made, and the client gets the try's answer. An Envoy before v1.39, which does not know budget.interval, is not sent it, and counts only the requests active now",
		Test: "golden backend-traffic; TestRetryBudget (e2e/dataplane); TestServedByEnvoyRelease (xdsserver); TestUpgradeRollsInOrder (e2e/conformance)"},
	{Kind: "XBackendTrafficPolicy", Path: "spec.sessionPersistence", Support: Yes,
		Note: "the session the route rules whose one backendRef is the Service keep, as a rule's own sessionPersistence would (a rule's own wins; a rule of several backendRefs keeps none, as its sessions could not hold across the split); a session Envoy cannot keep makes the policy Invalid",
		Test: "golden backend-traffic"},
	{Kind: "XMesh", Path: "spec", Support: OutOfScope, Note: "mesh configuration"},
}
