package routerule

import (
	"fmt"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/controller/pkg/condition"
	"isobar.dev/controller/pkg/envoyrules"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// applyFilter adds one filter to r.
func applyFilter(r *ir.Route, f gatewayv1.HTTPRouteFilter) error {
	switch f.Type {
	case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
		if f.RequestHeaderModifier == nil {
			return fmt.Errorf("filter RequestHeaderModifier has no requestHeaderModifier")
		}
		h, err := mergeHeaders(r.RequestHeaders, f.RequestHeaderModifier)
		if err != nil {
			return err
		}
		r.RequestHeaders = h
	case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
		if f.ResponseHeaderModifier == nil {
			return fmt.Errorf("filter ResponseHeaderModifier has no responseHeaderModifier")
		}
		h, err := mergeHeaders(r.ResponseHeaders, f.ResponseHeaderModifier)
		if err != nil {
			return err
		}
		r.ResponseHeaders = h
	case gatewayv1.HTTPRouteFilterRequestRedirect:
		if f.RequestRedirect == nil {
			return fmt.Errorf("filter RequestRedirect has no requestRedirect")
		}
		return redirect(r, f.RequestRedirect)
	case gatewayv1.HTTPRouteFilterURLRewrite:
		if f.URLRewrite == nil {
			return fmt.Errorf("filter URLRewrite has no urlRewrite")
		}
		return rewrite(r, f.URLRewrite)
	case gatewayv1.HTTPRouteFilterRequestMirror:
		// Resolved with the backends, by mirror.
		if f.RequestMirror == nil {
			return fmt.Errorf("filter RequestMirror has no requestMirror")
		}
	case gatewayv1.HTTPRouteFilterExternalAuth:
		// Resolved with the backends, by externalAuth.
		return nil
	case gatewayv1.HTTPRouteFilterCORS:
		if f.CORS == nil {
			return fmt.Errorf("filter CORS has no cors")
		}
		return cors(r, f.CORS)
	case gatewayv1.HTTPRouteFilterExtensionRef:
		ref := f.ExtensionRef
		if ref == nil {
			return condition.UnresolvedRef(gatewayv1.RouteReasonInvalidKind, "filter ExtensionRef has no extensionRef")
		}
		return condition.UnresolvedRef(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("filter ExtensionRef %s/%s %s: Isobar supports no extension filters", ref.Group, ref.Kind, ref.Name))
	default:
		return fmt.Errorf("filter type %s is not supported yet", f.Type)
	}
	return nil
}

// checkModifiable checks a header name a filter sets, adds or removes: a
// token, and one Envoy lets a route modify (not host: it would refuse the
// whole route configuration).
func checkModifiable(name string) error {
	if err := validate.Token(name, "header name"); err != nil {
		return err
	}
	if !envoyrules.Modifiable(name) {
		return fmt.Errorf("header %q cannot be modified by a header filter; to change the host use URLRewrite's hostname", name)
	}
	return nil
}

func mergeHeaders(h *ir.HeaderModifier, f *gatewayv1.HTTPHeaderFilter) (*ir.HeaderModifier, error) {
	if h == nil {
		h = &ir.HeaderModifier{}
	}
	for _, list := range []struct {
		in  []gatewayv1.HTTPHeader
		out *[]ir.Header
	}{{f.Set, &h.Set}, {f.Add, &h.Add}} {
		for _, x := range list.in {
			if err := checkModifiable(string(x.Name)); err != nil {
				return nil, err
			}
			if err := validate.Value(x.Value, "header", string(x.Name), "value"); err != nil {
				return nil, err
			}
			*list.out = append(*list.out, ir.Header{Name: string(x.Name), Value: x.Value})
		}
	}
	for _, name := range f.Remove {
		if err := checkModifiable(name); err != nil {
			return nil, err
		}
	}
	h.Remove = append(h.Remove, f.Remove...)
	return h, nil
}

func redirect(r *ir.Route, f *gatewayv1.HTTPRequestRedirectFilter) error {
	if r.Rewrite != nil {
		return fmt.Errorf("a rule cannot have both RequestRedirect and URLRewrite")
	}
	rd := &ir.Redirect{StatusCode: 302}
	if f.StatusCode != nil {
		rd.StatusCode = *f.StatusCode
		switch rd.StatusCode {
		case 301, 302, 303, 307, 308:
		default:
			return fmt.Errorf("redirect status code %d is not one of 301, 302, 303, 307 and 308", rd.StatusCode)
		}
	}
	if f.Scheme != nil {
		rd.Scheme = *f.Scheme
		if rd.Scheme != "http" && rd.Scheme != "https" {
			return fmt.Errorf("redirect scheme %q is not http or https", rd.Scheme)
		}
	}
	if f.Hostname != nil {
		rd.Hostname = string(*f.Hostname)
		if err := validate.Hostname(rd.Hostname, false); err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
	}
	if f.Port != nil {
		if *f.Port < 1 || *f.Port > 65535 {
			return fmt.Errorf("redirect port %d is outside 1-65535", *f.Port)
		}
		rd.Port = uint32(*f.Port)
	}
	if f.Path != nil {
		rd.HasPath = true
		switch f.Path.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			rd.FullPath = ptr.Deref(f.Path.ReplaceFullPath, "")
		case gatewayv1.PrefixMatchHTTPPathModifier:
			rd.PrefixPath = ptr.Deref(f.Path.ReplacePrefixMatch, "")
		default:
			return fmt.Errorf("redirect path type %q is not supported", f.Path.Type)
		}
		if err := checkReplacement("redirect", rd.FullPath+rd.PrefixPath); err != nil {
			return err
		}
	}
	r.Redirect = rd
	return nil
}

func rewrite(r *ir.Route, f *gatewayv1.HTTPURLRewriteFilter) error {
	if r.Redirect != nil {
		return fmt.Errorf("a rule cannot have both RequestRedirect and URLRewrite")
	}
	rw := &ir.Rewrite{}
	if f.Hostname != nil {
		rw.Hostname = string(*f.Hostname)
		if err := validate.Hostname(rw.Hostname, false); err != nil {
			return fmt.Errorf("rewrite: %w", err)
		}
	}
	if f.Path != nil {
		rw.HasPath = true
		switch f.Path.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			rw.FullPath = ptr.Deref(f.Path.ReplaceFullPath, "")
		case gatewayv1.PrefixMatchHTTPPathModifier:
			rw.PrefixPath = ptr.Deref(f.Path.ReplacePrefixMatch, "")
		default:
			return fmt.Errorf("rewrite path type %q is not supported", f.Path.Type)
		}
		if err := checkReplacement("rewrite", rw.FullPath+rw.PrefixPath); err != nil {
			return err
		}
	}
	r.Rewrite = rw
	return nil
}

// checkReplacement checks a replacement path; empty means "/".
func checkReplacement(what, p string) error {
	if p == "" {
		return nil
	}
	return validate.Path(what+" path", p)
}

// httpFilter is a GRPCRoute filter as the HTTPRoute filter of the same type:
// the types they share have the same fields and meaning.
func httpFilter(f gatewayv1.GRPCRouteFilter) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{
		Type:                   gatewayv1.HTTPRouteFilterType(f.Type),
		RequestHeaderModifier:  f.RequestHeaderModifier,
		ResponseHeaderModifier: f.ResponseHeaderModifier,
		RequestMirror:          f.RequestMirror,
		ExtensionRef:           f.ExtensionRef,
	}
}

func httpFilters(fs []gatewayv1.GRPCRouteFilter) []gatewayv1.HTTPRouteFilter {
	out := make([]gatewayv1.HTTPRouteFilter, len(fs))
	for i, f := range fs {
		out[i] = httpFilter(f)
	}
	return out
}

// backendFilters applies the filters of one backendRef. Envoy can change
// headers per weighted cluster; other filters cannot apply to one backend's
// share and are refused.
func backendFilters(wc *ir.WeightedCluster, filters []gatewayv1.HTTPRouteFilter) error {
	for _, f := range filters {
		var err error
		switch {
		case f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil:
			wc.RequestHeaders, err = mergeHeaders(wc.RequestHeaders, f.RequestHeaderModifier)
		case f.Type == gatewayv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			wc.ResponseHeaders, err = mergeHeaders(wc.ResponseHeaders, f.ResponseHeaderModifier)
		default:
			err = fmt.Errorf("filter %s is not supported on a backendRef; use RequestHeaderModifier or ResponseHeaderModifier", f.Type)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
