package offline

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
)

// workload runs shared/bench/gen-routes.py (beside the repository, or at
// $ISOBAR_GEN_ROUTES) for n routes, or skips the benchmark without it.
func workload(b *testing.B, n int) []byte {
	b.Helper()
	script := os.Getenv("ISOBAR_GEN_ROUTES")
	if script == "" {
		out, err := exec.Command("go", "env", "GOWORK").Output()
		if err != nil {
			b.Skip("no workspace:", err)
		}
		script = filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "..", "shared", "bench", "gen-routes.py")
	}
	if _, err := os.Stat(script); err != nil {
		b.Skipf("workload generator not found: %v", err)
	}
	out, err := exec.Command("python3", script, "--routes", fmt.Sprint(n), "--controller-name", DefaultControllerName).Output()
	if err != nil {
		b.Fatalf("gen-routes.py: %v", err)
	}
	return out
}

// sizes are the workloads' route counts: 100, 1,000 and 10,000, or those
// ISOBAR_BENCH_ROUTES lists (ISOBAR_BENCH_ROUTES=100000).
var sizes = benchSizes()

func benchSizes() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("ISOBAR_BENCH_ROUTES"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{100, 1000, 10000}
	}
	return out
}

func BenchmarkLoad(b *testing.B) {
	for _, n := range sizes {
		data := workload(b, n)
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r := &resources.Resources{}
				if _, err := r.Load("bench", bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTranslate is a full translation, both stages and the check, of
// a loaded snapshot.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range sizes {
		data := workload(b, n)
		res := &resources.Resources{}
		if _, err := res.Load("bench", bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		for _, check := range []bool{false, true} {
			b.Run(fmt.Sprintf("routes=%d/check=%v", n, check), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if check {
						if _, err := Translate(res, Options{}); err != nil {
							b.Fatal(err)
						}
					} else {
						translateUnchecked(b, res)
					}
				}
			})
		}
	}
}

// translateUnchecked is what the controller does on every change: both
// stages, without the validation that tests and translate add.
func translateUnchecked(b *testing.B, res *resources.Resources) {
	g := translate.Translate(res, translate.Options{ControllerName: DefaultControllerName})
	for _, gw := range g.Gateways {
		if _, err := xds.NewTranslator(xds.DefaultSettings()).Translate(gw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOneRouteChange is what the controller does when one route of a
// 10,000-route snapshot (the largest of sizes) changes: both stages with
// their caches warm.
func BenchmarkOneRouteChange(b *testing.B) {
	data := workload(b, slices.Max(sizes))
	res := &resources.Resources{}
	if _, err := res.Load("bench", bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	translate := warmTranslators(b, res)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		k := i % len(res.HTTPRoutes)
		c := res.HTTPRoutes[k].DeepCopy()
		c.Generation++
		c.Spec.Rules[0].Filters[0].RequestHeaderModifier.Set[0].Value = fmt.Sprint("changed-", i)
		res.HTTPRoutes[k] = c
		translate()
	}
}

// BenchmarkServiceChange is what the controller does when a Service changes
// in a 10,000-route snapshot (the largest of sizes): one in a namespace no
// route uses, one that a single route uses, and one that a fiftieth of the
// routes use (the workload spreads routes over 50 Services). Each iteration
// adds or removes a second port, which changes what rules can resolve.
func BenchmarkServiceChange(b *testing.B) {
	data := workload(b, slices.Max(sizes))
	for _, used := range []string{"none", "one-route", "shared"} {
		b.Run("used-by="+used, func(b *testing.B) {
			res := &resources.Resources{}
			if _, err := res.Load("bench", bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
			var i int
			switch used {
			case "none":
				svc := res.Services[0].DeepCopy()
				svc.Namespace, svc.UID = "elsewhere", "elsewhere"
				res.Services = append(res.Services, svc)
				i = len(res.Services) - 1
			case "one-route":
				svc := res.Services[0].DeepCopy()
				svc.Name, svc.UID = "solo", "solo"
				res.Services = append(res.Services, svc)
				i = len(res.Services) - 1
				r := res.HTTPRoutes[0].DeepCopy()
				r.Namespace = svc.Namespace
				for j := range r.Spec.Rules {
					for k := range r.Spec.Rules[j].BackendRefs {
						r.Spec.Rules[j].BackendRefs[k].Name = "solo"
						r.Spec.Rules[j].BackendRefs[k].Namespace = nil
					}
				}
				res.HTTPRoutes[0] = r
			}
			translate := warmTranslators(b, res)
			base := res.Services[i]
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				svc := base.DeepCopy()
				if n%2 == 1 {
					p := svc.Spec.Ports[0]
					p.Name, p.Port = "extra", p.Port+1
					svc.Spec.Ports = append(svc.Spec.Ports, p)
				}
				res.Services[i] = svc
				translate()
			}
		})
	}
}

// warmTranslators translates res with both stages once and returns what
// translates it again with the same translators, as the controller does on
// every change.
func warmTranslators(b *testing.B, res *resources.Resources) func() {
	stage1 := translate.NewTranslator(translate.Options{ControllerName: DefaultControllerName})
	stage2 := xds.NewTranslator(xds.DefaultSettings())
	translate := func() {
		g := stage1.Translate(res)
		if _, err := stage2.Translate(g.Gateways[0]); err != nil {
			b.Fatal(err)
		}
	}
	translate()
	return translate
}
