package xds

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"isobar.dev/controller/pkg/ir"
)

// luaFilter is Envoy's Lua filter. Every connection manager has it, with a
// script that does nothing, as Contour's do: a backend whose cookies are
// rewritten runs its own script (its weighted cluster's configuration),
// so that a rewrite changes the route and not the listener.
const luaFilter = "envoy.filters.http.lua"

func luaHTTPFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: luaFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(&luav3.Lua{
		DefaultSourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "-- Scripts are per backend (cookie rewriting).\n"}},
	})}}
}

// cookieRewriteScript is the Lua script that rewrites the attributes of
// the cookies a backend sets: the Set-Cookie headers of its responses
// whose cookie has a rewrite get their Path, Domain and SameSite
// replaced (or added) and Secure added or removed, as each rewrite says.
func cookieRewriteScript(rewrites []ir.CookieRewrite) *luav3.LuaPerRoute {
	var b strings.Builder
	b.WriteString("local rewrites = {\n")
	for _, c := range rewrites {
		b.WriteString("  [" + luaString(c.Name) + "] = {")
		if c.Path != "" {
			b.WriteString("path = " + luaString(c.Path) + ", ")
		}
		if c.Domain != "" {
			b.WriteString("domain = " + luaString(c.Domain) + ", ")
		}
		if c.Secure != nil {
			if *c.Secure {
				b.WriteString("secure = true, ")
			} else {
				b.WriteString("secure = false, ")
			}
		}
		if c.SameSite != "" {
			b.WriteString("samesite = " + luaString(c.SameSite) + ", ")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	b.WriteString(cookieRewriteFunctions)
	return &luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_SourceCode{SourceCode: &corev3.DataSource{
		Specifier: &corev3.DataSource_InlineString{InlineString: b.String()},
	}}}
}

// luaString is s as a Lua string literal.
func luaString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// cookieRewriteFunctions rewrite the Set-Cookie headers of a response with
// the table rewrites, by cookie name; a header whose cookie has none is
// kept as it is, and so is the order of the headers.
const cookieRewriteFunctions = `
local function rewrite(cookie, r)
  local parts = {}
  for part in string.gmatch(cookie, "[^;]+") do
    if #parts == 0 then
      parts[1] = part
    else
      local attr = string.lower(string.match(part, "^%s*([^=]-)%s*=") or string.match(part, "^%s*(.-)%s*$"))
      local drop = (attr == "path" and r.path ~= nil) or (attr == "domain" and r.domain ~= nil) or
        (attr == "secure" and r.secure ~= nil) or (attr == "samesite" and r.samesite ~= nil)
      if not drop then
        parts[#parts + 1] = part
      end
    end
  end
  if r.path ~= nil then parts[#parts + 1] = " Path=" .. r.path end
  if r.domain ~= nil then parts[#parts + 1] = " Domain=" .. r.domain end
  if r.secure == true then parts[#parts + 1] = " Secure" end
  if r.samesite ~= nil then parts[#parts + 1] = " SameSite=" .. r.samesite end
  return table.concat(parts, ";")
end

function envoy_on_response(response_handle)
  local headers = response_handle:headers()
  local n = headers:getNumValues("set-cookie")
  if n == 0 then
    return
  end
  local cookies, changed = {}, false
  for i = 0, n - 1 do
    local cookie = headers:getAtIndex("set-cookie", i)
    local name = string.match(cookie, "^%s*([^=;%s]+)")
    local r = name and rewrites[name]
    if r then
      cookie, changed = rewrite(cookie, r), true
    end
    cookies[#cookies + 1] = cookie
  end
  if changed then
    headers:remove("set-cookie")
    for _, cookie in ipairs(cookies) do
      headers:add("set-cookie", cookie)
    end
  end
end
`
