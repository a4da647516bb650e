// Package envoyrules applies the checks Envoy makes when it loads a
// resource beyond its protoc-gen-validate rules: a resource that fails them
// is NACKed, and a rejected RouteConfiguration holds back every route that
// shares it. Both the translator's checks (package xdscheck) and the
// simulator (package envoysim) apply them, so a test fails before a fleet
// would refuse the configuration.
package envoyrules

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"isobar.dev/controller/pkg/validate"
)

// Modifiable reports whether Envoy lets a header mutation (add, set or
// remove, on requests or responses) name the header: not a pseudo-header
// (":"-prefixed) and not host (Envoy's HeaderParser refuses both, as
// ":-prefixed or host headers may not be modified").
func Modifiable(name string) bool {
	return !strings.HasPrefix(name, ":") && !strings.EqualFold(name, "host")
}

// RouteConfiguration checks a route configuration as Envoy does on load:
// header mutations at every level name modifiable headers, virtual host
// domains are unique, and every regular expression compiles with RE2.
func RouteConfiguration(rc *routev3.RouteConfiguration) error {
	var errs []error
	headers := func(where string, add []*corev3.HeaderValueOption, remove []string, resAdd []*corev3.HeaderValueOption, resRemove []string) {
		for _, list := range [][]*corev3.HeaderValueOption{add, resAdd} {
			for _, h := range list {
				if !Modifiable(h.GetHeader().GetKey()) {
					errs = append(errs, fmt.Errorf("%s: header %q may not be modified (Envoy refuses host and pseudo-headers)", where, h.GetHeader().GetKey()))
				}
			}
		}
		for _, list := range [][]string{remove, resRemove} {
			for _, name := range list {
				if !Modifiable(name) {
					errs = append(errs, fmt.Errorf("%s: header %q may not be removed (Envoy refuses host and pseudo-headers)", where, name))
				}
			}
		}
	}
	headers("route configuration "+rc.GetName(), rc.GetRequestHeadersToAdd(), rc.GetRequestHeadersToRemove(), rc.GetResponseHeadersToAdd(), rc.GetResponseHeadersToRemove())
	domains := map[string]string{}
	for _, vh := range rc.GetVirtualHosts() {
		where := fmt.Sprintf("route configuration %s, virtual host %s", rc.GetName(), vh.GetName())
		headers(where, vh.GetRequestHeadersToAdd(), vh.GetRequestHeadersToRemove(), vh.GetResponseHeadersToAdd(), vh.GetResponseHeadersToRemove())
		for _, d := range vh.GetDomains() {
			if other, dup := domains[strings.ToLower(d)]; dup {
				errs = append(errs, fmt.Errorf("%s: domain %q is also in virtual host %s (Envoy permits only unique domains)", where, d, other))
			}
			domains[strings.ToLower(d)] = vh.GetName()
		}
		for _, r := range vh.GetRoutes() {
			rw := where + ", route " + r.GetName()
			headers(rw, r.GetRequestHeadersToAdd(), r.GetRequestHeadersToRemove(), r.GetResponseHeadersToAdd(), r.GetResponseHeadersToRemove())
			for _, c := range r.GetRoute().GetWeightedClusters().GetClusters() {
				headers(rw+", weighted cluster "+c.GetName(), c.GetRequestHeadersToAdd(), c.GetRequestHeadersToRemove(), c.GetResponseHeadersToAdd(), c.GetResponseHeadersToRemove())
			}
		}
	}
	errs = append(errs, regexes(rc)...)
	return errors.Join(errs...)
}

// Listener checks a listener as Envoy does on load: no two filter chains
// have the same match (Envoy refuses "multiple filter chains with the same
// matching rules"), and the CAs and revocation lists a chain verifies
// clients with load.
func Listener(l *listenerv3.Listener) error {
	var errs []error
	chains := l.GetFilterChains()
	for i, a := range chains {
		for _, b := range chains[:i] {
			if proto.Equal(a.GetFilterChainMatch(), b.GetFilterChainMatch()) {
				errs = append(errs, fmt.Errorf("listener %s: filter chains %q and %q have the same match", l.GetName(), b.GetName(), a.GetName()))
			}
		}
		if ts := a.GetTransportSocket(); ts != nil {
			ctx := &tlsv3.DownstreamTlsContext{}
			if ts.GetTypedConfig().MessageIs(ctx) && ts.GetTypedConfig().UnmarshalTo(ctx) == nil {
				if err := validationLoads(ctx.GetCommonTlsContext().GetValidationContext()); err != nil {
					errs = append(errs, fmt.Errorf("listener %s, filter chain %d: %w", l.GetName(), i, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Cluster checks a cluster as Envoy does on load: the CAs it verifies its
// endpoints with load.
func Cluster(c *clusterv3.Cluster) error {
	ts := c.GetTransportSocket()
	if ts == nil {
		return nil
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if !ts.GetTypedConfig().MessageIs(ctx) || ts.GetTypedConfig().UnmarshalTo(ctx) != nil {
		return nil
	}
	if err := validationLoads(ctx.GetCommonTlsContext().GetValidationContext()); err != nil {
		return fmt.Errorf("cluster %s: %w", c.GetName(), err)
	}
	return nil
}

// validationLoads checks the inline CA and revocation lists of a
// validation context, as Envoy loads them: a CA that does not load makes
// Envoy refuse the resource.
func validationLoads(vc *tlsv3.CertificateValidationContext) error {
	if data := inline(vc.GetTrustedCa()); data != nil {
		if err := validate.CABundle(data); err != nil {
			return fmt.Errorf("trusted_ca: Envoy refuses it: %w", err)
		}
	}
	if data := inline(vc.GetCrl()); data != nil {
		if err := validate.CRLs(data); err != nil {
			return fmt.Errorf("crl: Envoy refuses it: %w", err)
		}
	}
	return nil
}

// inline is a data source's inline bytes or string; nil for another
// source.
func inline(ds *corev3.DataSource) []byte {
	if b := ds.GetInlineBytes(); len(b) > 0 {
		return b
	}
	if s := ds.GetInlineString(); s != "" {
		return []byte(s)
	}
	return nil
}

// regexes compiles every RE2 regular expression below m. Go's regexp
// syntax is RE2's.
func regexes(m proto.Message) []error {
	var errs []error
	var walk func(protoreflect.Message)
	walk = func(msg protoreflect.Message) {
		if re, ok := msg.Interface().(*matcherv3.RegexMatcher); ok {
			if _, err := regexp.Compile(re.GetRegex()); err != nil {
				errs = append(errs, fmt.Errorf("regular expression %q does not compile: %w", re.GetRegex(), err))
			}
			return
		}
		msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Message() == nil || fd.IsMap():
			case fd.IsList():
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			default:
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
	return errs
}
