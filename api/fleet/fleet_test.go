package fleet

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestName(t *testing.T) {
	if got, want := Name("web", "isobar", Envoy), "web-isobar-envoy"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := Base("web", "isobar"), "web-isobar"; got != want {
		t.Errorf("Base = %q, want %q", got, want)
	}
}

func TestShorten(t *testing.T) {
	long := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name string
		a, b string // two names that share a long prefix
	}{
		{name: "gateway names", a: Name(long+"x", long, Envoy), b: Name(long+"y", long, Envoy)},
		{name: "components", a: Name(long, long, Envoy), b: Name(long, long, Controller)},
		{name: "trailing separator", a: Shorten(strings.Repeat("b", 53) + "-" + long), b: Shorten(strings.Repeat("b", 53) + "-" + long + "z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []string{tc.a, tc.b} {
				if len(n) > MaxNameLength {
					t.Errorf("%q is %d characters, more than %d", n, len(n), MaxNameLength)
				}
				if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
					t.Errorf("%q is not a DNS label: %v", n, errs)
				}
				if errs := validation.IsValidLabelValue(n); len(errs) > 0 {
					t.Errorf("%q is not a label value: %v", n, errs)
				}
			}
			if tc.a == tc.b {
				t.Errorf("two different names shortened to the same %q", tc.a)
			}
		})
	}
	if got := Shorten(long); got != long {
		t.Errorf("Shorten changed a short name: %q", got)
	}
	if a, b := Shorten(long+long), Shorten(long+long); a != b {
		t.Error("Shorten is not stable")
	}
}

func TestLabels(t *testing.T) {
	l := Labels(strings.Repeat("g", 200), Controller)
	for k, v := range l {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	if l[LabelComponent] != "controller" || l[LabelManagedBy] != "isobar-operator" {
		t.Errorf("Labels = %v", l)
	}
}
