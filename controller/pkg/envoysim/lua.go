package envoysim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	lua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/types/known/anypb"
)

const luaFilterName = "envoy.filters.http.lua"

// luaTimeout bounds a script's run: Envoy has none, but a script that does
// not end would hold the request forever.
const luaTimeout = time.Second

// luaFilter checks the Lua filter's own script: the simulator models a
// filter whose default script does nothing (its per-route scripts do).
func luaFilter(hf *hcmv3.HttpFilter) error {
	cfg, err := unpack[luav3.Lua](hf.GetTypedConfig(), "Lua filter")
	if err != nil {
		return err
	}
	if err := understand(cfg, "default_source_code"); err != nil {
		return err
	}
	code := cfg.GetDefaultSourceCode().GetInlineString()
	if err := understand(cfg.GetDefaultSourceCode(), "inline_string"); err != nil {
		return err
	}
	L, err := newLuaState(code)
	if err != nil {
		return err
	}
	defer L.Close()
	for _, hook := range []string{"envoy_on_request", "envoy_on_response"} {
		if L.GetGlobal(hook) != lua.LNil {
			return errUnsupportedf("a Lua filter whose default script defines %s", hook)
		}
	}
	return nil
}

// luaScript is the script of a weighted cluster's Lua configuration, ""
// for none.
func luaScript(cfg *anypb.Any) (string, error) {
	if cfg == nil {
		return "", nil
	}
	pr, err := unpack[luav3.LuaPerRoute](cfg, "Lua per route")
	if err != nil {
		return "", err
	}
	if err := understand(pr, "source_code"); err != nil {
		return "", err
	}
	if err := understand(pr.GetSourceCode(), "inline_string"); err != nil {
		return "", err
	}
	code := pr.GetSourceCode().GetInlineString()
	L, err := newLuaState(code)
	if err != nil {
		return "", err
	}
	L.Close()
	return code, nil
}

// newLuaState loads a script as Envoy would, with Lua's base, string and
// table libraries; a script that does not load makes Envoy reject the
// configuration.
func newLuaState(code string) (*lua.LState, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.StringLibName, lua.OpenString}, {lua.TabLibName, lua.OpenTable}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), luaTimeout)
	defer cancel()
	L.SetContext(ctx)
	if err := L.DoString(code); err != nil {
		L.Close()
		return nil, fmt.Errorf("a Lua script that does not load: Envoy rejects the configuration: %w", err)
	}
	L.RemoveContext()
	return L, nil
}

// runResponseLua runs a script's envoy_on_response on a response's
// headers, with the part of Envoy's stream handle API the scripts use:
// headers() and its get, getAtIndex (from 0), getNumValues, add, replace
// and remove. A script that fails leaves the headers as they were, as
// Envoy does (it logs the error and goes on).
func runResponseLua(code string, headers []Header) ([]Header, error) {
	L, err := newLuaState(code)
	if err != nil {
		return nil, err
	}
	defer L.Close()
	hook := L.GetGlobal("envoy_on_response")
	if hook == lua.LNil {
		return headers, nil
	}
	out := slices.Clone(headers)
	h := L.NewTable()
	name := func(L *lua.LState) string { return strings.ToLower(L.CheckString(2)) }
	methods := map[string]lua.LGFunction{
		"get": func(L *lua.LState) int {
			var vals []string
			for _, x := range out {
				if x.Name == name(L) {
					vals = append(vals, x.Value)
				}
			}
			if len(vals) == 0 {
				L.Push(lua.LNil)
			} else {
				L.Push(lua.LString(strings.Join(vals, ",")))
			}
			return 1
		},
		"getAtIndex": func(L *lua.LState) int {
			n, i := name(L), L.CheckInt(3)
			for _, x := range out {
				if x.Name == n {
					if i == 0 {
						L.Push(lua.LString(x.Value))
						return 1
					}
					i--
				}
			}
			L.Push(lua.LNil)
			return 1
		},
		"getNumValues": func(L *lua.LState) int {
			n, c := name(L), 0
			for _, x := range out {
				if x.Name == n {
					c++
				}
			}
			L.Push(lua.LNumber(c))
			return 1
		},
		"add": func(L *lua.LState) int {
			out = append(out, Header{Name: name(L), Value: L.CheckString(3)})
			return 0
		},
		"replace": func(L *lua.LState) int {
			n := name(L)
			out = append(slices.DeleteFunc(out, func(x Header) bool { return x.Name == n }), Header{Name: n, Value: L.CheckString(3)})
			return 0
		},
		"remove": func(L *lua.LState) int {
			n := name(L)
			out = slices.DeleteFunc(out, func(x Header) bool { return x.Name == n })
			return 0
		},
	}
	for k, f := range methods {
		h.RawSetString(k, L.NewFunction(f))
	}
	handle := L.NewTable()
	handle.RawSetString("headers", L.NewFunction(func(L *lua.LState) int { L.Push(h); return 1 }))
	ctx, cancel := context.WithTimeout(context.Background(), luaTimeout)
	defer cancel()
	L.SetContext(ctx)
	if err := L.CallByParam(lua.P{Fn: hook, NRet: 0, Protect: true}, handle); err != nil {
		return headers, nil
	}
	return out, nil
}

// checkLuaConfig checks where a route configures the Lua filter: the
// simulator models scripts of weighted clusters, which need the filter in
// the connection manager.
func checkLuaConfig(vh *routev3.VirtualHost, rt *routev3.Route, filter bool) error {
	if perFilterConfig(vh, rt, luaFilterName) != nil {
		return errUnsupportedf("a Lua script of a route or virtual host")
	}
	for _, cw := range rt.GetRoute().GetWeightedClusters().GetClusters() {
		if _, ok := cw.GetTypedPerFilterConfig()[luaFilterName]; ok && !filter {
			return fmt.Errorf("a Lua script for a filter the connection manager does not have: Envoy would ignore it")
		}
	}
	return nil
}
