package httpproxy

import (
	"fmt"
	"net/url"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/validate"
)

// corsPolicy is a virtual host's CORS policy, as Contour reads it: an
// origin is "*", an exact "scheme://host[:port]", or else a regular
// expression; methods and headers are listed as written; maxAge is a
// duration, "0" telling browsers not to cache preflights.
func corsPolicy(p *contourv1.CORSPolicy) (*ir.CORS, *problem) {
	if p == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) (*ir.CORS, *problem) {
		return nil, refused(contourv1.ConditionTypeCORSError, "PolicyDidNotParse", "Spec.VirtualHost.CORSPolicy: "+fmt.Sprintf(format, args...))
	}
	if f := refuseCORS(p); f != "" {
		return nil, refused(contourv1.ConditionTypeCORSError, "NotSupported", fmt.Sprintf("virtualhost.corsPolicy.%s is not supported yet", f))
	}
	if len(p.AllowOrigin) == 0 {
		return bad("invalid allowed origin configuration with length 0")
	}
	// Origins compare without regard to case, and a preflight from an
	// origin not allowed goes to the backend, as Contour has them.
	out := &ir.CORS{AllowCredentials: p.AllowCredentials, AllowPrivateNetwork: p.AllowPrivateNetwork, OriginsIgnoreCase: true, ForwardPreflights: true}
	for _, o := range p.AllowOrigin {
		u, err := url.Parse(o)
		switch {
		case o == "*" || err == nil && u.Scheme != "" && u.Host != "" && u.Scheme+"://"+u.Host == o:
			out.AllowOrigins = append(out.AllowOrigins, o)
		case validate.Regex("allowed origin", o) != nil:
			return bad("invalid allowed origin %q: allowed origin is invalid exact match and invalid regex match", o)
		default:
			out.AllowOriginRegexes = append(out.AllowOriginRegexes, o)
		}
	}
	for _, list := range []struct {
		what string
		in   []contourv1.CORSHeaderValue
		out  *[]string
	}{{"method", p.AllowMethods, &out.AllowMethods}, {"header", p.AllowHeaders, &out.AllowHeaders}, {"exposed header", p.ExposeHeaders, &out.ExposeHeaders}} {
		for _, v := range list.in {
			if err := validate.Token(string(v), "CORS "+list.what); err != nil && v != "*" {
				return bad("%v", err)
			}
			*list.out = append(*list.out, string(v))
		}
	}
	switch p.MaxAge {
	case "":
	case "0":
		out.MaxAgeZero = true
	default:
		d, err := time.ParseDuration(p.MaxAge)
		switch {
		case err != nil || d < 0:
			return bad("invalid max age value %q", p.MaxAge)
		case d == 0:
			out.MaxAgeZero = true
		default:
			out.MaxAgeSeconds = int32(min(d/time.Second, 1<<31-1))
		}
	}
	return out, nil
}
