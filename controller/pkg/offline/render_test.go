package offline

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// toYAML converts a list item by item; its text must be what converting
// the whole list gives, wrapping of long lines and block scalars included.
func TestToYAMLItemByItem(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for _, js := range []string{
		`[]`,
		`{"a":[1,2]}`,
		`[{"a":1},{"b":[{"c":"d"},{"e":[]}]}]`,
		`[{"message":"` + long + `"},{"nested":{"message":"` + long + `"}}]`,
		`[{"text":"line one\nline two\n\nline four"},"plain",3,null,{}]`,
	} {
		want, err := yaml.JSONToYAML([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		got, err := toYAML([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", js, got, want)
		}
	}
}
