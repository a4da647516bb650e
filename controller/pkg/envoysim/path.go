package envoysim

import (
	"strings"
)

// canonicalPath follows Envoy's normalize_path (PathUtil::canonicalPath,
// which runs Chromium's URL path canonicalizer) on the path part of a
// request target, leaving the query alone:
//
//   - a backslash is a slash, and a path that does not start with one gets
//     one;
//   - percent-encoded unreserved characters (RFC 3986 section 2.3: letters,
//     digits, "-", ".", "_", "~") are decoded, so "%2e%2e" is a ".."
//     segment; every other escape is kept as written, case included
//     ("%2F%2f" stays);
//   - "." and ".." segments are removed (RFC 3986 section 5.2.4), and a
//     ".." above the root is dropped;
//   - empty segments stay: "//" is merged only by merge_slashes;
//   - bytes a URL path cannot hold (controls, space, non-ASCII, `"<>` and
//     the backtick and braces) are percent-encoded.
//
// An escaped NUL makes the path invalid: ok is false, and Envoy answers
// 400.
func canonicalPath(target string) (_ string, ok bool) {
	p, rest, hasRest := cutQuery(target)
	var b strings.Builder
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, `\`) {
		b.WriteByte('/')
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			b.WriteByte('/')
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			v := unhex(p[i+1])<<4 | unhex(p[i+2])
			if v == 0 {
				return "", false
			}
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteString(p[i : i+3])
			}
			i += 2
		case c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>`{}", c) >= 0:
			const digits = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
		default:
			b.WriteByte(c)
		}
	}
	out := removeDotSegments(b.String())
	if hasRest {
		out += rest
	}
	return out, true
}

// cutQuery splits a request target into its path and what follows it (the
// query or fragment, with its "?" or "#").
func cutQuery(target string) (path, rest string, ok bool) {
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		return target[:i], target[i:], true
	}
	return target, "", false
}

// removeDotSegments is RFC 3986 section 5.2.4 on an absolute path.
func removeDotSegments(p string) string {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// unescapeSlashes is PathUtil::unescapeSlashes: %2F and %5C (either case)
// in the path, not the query, become a slash and a backslash; found says
// there were any.
func unescapeSlashes(target string) (_ string, found bool) {
	p, rest, _ := cutQuery(target)
	if !strings.Contains(p, "%") {
		return target, false
	}
	u := strings.NewReplacer("%2F", "/", "%2f", "/", "%5C", `\`, "%5c", `\`).Replace(p)
	return u + rest, u != p
}

// mergeSlashes is Envoy's merge_slashes: runs of slashes in the path (not
// the query) become one.
func mergeSlashes(target string) string {
	p, rest, _ := cutQuery(target)
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	return p + rest
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
