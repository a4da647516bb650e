package dataplane

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"isobar.dev/api/envoyruntime"
)

// rtdsLayers are the names of the bootstrap's RTDS layers, which Envoy
// subscribes to by name.
func (e *Envoy) rtdsLayers() []string {
	var out []string
	for _, l := range e.boot.Runtime {
		if l.RTDS != "" {
			out = append(out, l.RTDS)
		}
	}
	slices.Sort(out)
	return out
}

// rtdsTimeout is how long Envoy's first start waits for its RTDS layers:
// each has its own initial fetch timeout, and they are waited for at once.
func (e *Envoy) rtdsTimeout() time.Duration {
	var d time.Duration
	for _, l := range e.boot.Runtime {
		if l.RTDS != "" {
			d = max(d, l.InitialFetchTimeout)
		}
	}
	return d
}

// runtimeCame reports whether every RTDS layer has come.
func (e *Envoy) runtimeCame() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range e.rtdsLayers() {
		if _, ok := e.resources[resourcev3.RuntimeType][name]; !ok {
			return false
		}
	}
	return true
}

// checkRuntime is what Envoy's RTDS subscription refuses: a response that
// does not add or remove exactly one layer, or names a layer the
// bootstrap does not have.
func (e *Envoy) checkRuntime(resp *discoveryv3.DeltaDiscoveryResponse) error {
	if n, m := len(resp.GetResources()), len(resp.GetRemovedResources()); n+m != 1 {
		return fmt.Errorf("unexpected RTDS resource length, number of added resources %d, number of removed resources %d", n, m)
	}
	name := ""
	if len(resp.GetResources()) == 1 {
		rt := &runtimev3.Runtime{}
		if err := resp.GetResources()[0].GetResource().UnmarshalTo(rt); err != nil {
			return err
		}
		name = rt.GetName()
	} else {
		name = resp.GetRemovedResources()[0]
	}
	if !slices.Contains(e.rtdsLayers(), name) {
		return fmt.Errorf("unexpected RTDS runtime (expecting %v): %s", e.rtdsLayers(), name)
	}
	return nil
}

// runtimeValue is a runtime key's value as Envoy's runtime snapshot has it:
// the last layer that sets it wins; an RTDS layer not yet come, or
// removed, sets nothing. Keys are flat (Envoy also reads nested structs
// as dotted keys; our layers do not use them). Called with e.mu held.
func (e *Envoy) runtimeValue(key string) (*structpb.Value, bool) {
	var v *structpb.Value
	for _, l := range e.boot.Runtime {
		fields := l.Static
		if l.RTDS != "" {
			rt, _ := e.resources[resourcev3.RuntimeType][l.RTDS].(*runtimev3.Runtime)
			fields = rt.GetLayer().GetFields()
		}
		if f, ok := fields[key]; ok {
			v = f
		}
	}
	return v, v != nil
}

// listenerConnectionLimit is the limit on the connections of a listener,
// as Envoy reads it on each accept (its runtime key, an integer); false
// when there is none.
func (e *Envoy) listenerConnectionLimit(listener string) (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.runtimeValue(envoyruntime.ListenerConnectionLimit(listener))
	if !ok {
		return 0, false
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if k.NumberValue >= 0 && k.NumberValue < math.MaxUint64 && k.NumberValue == math.Trunc(k.NumberValue) {
			return uint64(k.NumberValue), true
		}
	case *structpb.Value_StringValue:
		if n, err := strconv.ParseUint(k.StringValue, 10, 64); err == nil {
			return n, true
		}
	}
	// Envoy reads what is not an integer as no value: no limit.
	return 0, false
}
