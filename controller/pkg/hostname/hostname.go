// Package hostname matches hostnames as the Gateway API defines them: a
// name is exact ("foo.example.com") or a wildcard ("*.example.com", which
// matches one or more labels in front of "example.com" but not
// "example.com" itself); an empty hostname matches everything.
package hostname

import (
	"regexp"
	"strings"
)

// Intersect is the set of hosts that both a route hostname and a listener
// hostname match, expressed as one hostname, or "" and false when they are
// disjoint. The empty listener hostname matches all, so it keeps the route's.
func Intersect(route, listener string) (string, bool) {
	switch {
	case listener == "":
		return route, true
	case route == "":
		return listener, true
	case route == listener:
		return route, true
	}
	rw, lw := isWildcard(route), isWildcard(listener)
	switch {
	case !rw && !lw:
		return "", false
	case !rw && lw:
		return keepIf(route, wildcardMatches(listener, route))
	case rw && !lw:
		return keepIf(listener, wildcardMatches(route, listener))
	default: // both wildcards: the more specific one, if nested
		if strings.HasSuffix(route[1:], listener[1:]) {
			return route, true
		}
		if strings.HasSuffix(listener[1:], route[1:]) {
			return listener, true
		}
		return "", false
	}
}

func keepIf(h string, ok bool) (string, bool) {
	if !ok {
		return "", false
	}
	return h, true
}

func isWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// wildcardMatches reports whether wildcard "*.suffix" matches host, exact or
// wildcard: host must end in ".suffix" with at least one label before it.
func wildcardMatches(wildcard, host string) bool {
	suffix := wildcard[1:] // ".example.com"
	if isWildcard(host) {
		host = host[2:]
		return strings.HasSuffix("."+host, suffix) && len(host)+1 > len(suffix)
	}
	return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
}

// Matches reports whether a listener hostname matches host (an exact or
// wildcard hostname, "" for any).
func Matches(listener, host string) bool {
	switch {
	case listener == "":
		return true
	case host == "":
		return false
	case listener == host:
		return true
	case isWildcard(listener):
		return wildcardMatches(listener, host)
	default:
		return false
	}
}

// MoreSpecific reports whether listener hostname a is more specific than b:
// an exact name beats a wildcard, a longer wildcard beats a shorter one, and
// anything beats no hostname.
func MoreSpecific(a, b string) bool {
	switch {
	case a == b:
		return false
	case b == "":
		return true
	case a == "":
		return false
	case !isWildcard(a) && isWildcard(b):
		return true
	case isWildcard(a) && !isWildcard(b):
		return false
	default:
		return len(a) > len(b)
	}
}

// OrAny is a hostname as Envoy's domains and messages write it: "*" for
// none, which matches every host.
func OrAny(h string) string {
	if h == "" {
		return "*"
	}
	return h
}

// OneLabelAuthority is a regular expression an :authority matches when
// it is a wildcard's host with exactly one label in front ("a.example.com"
// for "*.example.com", not "a.b.example.com"), with or without a port:
// Contour's reading of an HTTPProxy's or Ingress's wildcard, which Envoy's
// virtual host domains (one or more labels) cannot express alone.
func OneLabelAuthority(wildcard string) string {
	return "^[a-z0-9]([-a-z0-9]*[a-z0-9])?" + regexp.QuoteMeta(strings.TrimPrefix(wildcard, "*")) + "(:[0-9]+)?"
}
