package offline

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// toYAML converts large arrays item by item and large objects field by
// field; its text must be what converting the whole gives, wrapping of long
// lines and block scalars included. With nothing too small to split, every
// array and object of these inputs is converted on its own.
func TestConvertYAMLPieceByPiece(t *testing.T) {
	long := strings.Repeat("word ", 40)
	inputs := []string{
		`[]`,
		`{}`,
		`"plain"`,
		`{"a":[1,2]}`,
		`[{"a":1},{"b":[{"c":"d"},{"e":[]}]}]`,
		`[{"message":"` + long + `"},{"nested":{"message":"` + long + `"}}]`,
		`[{"text":"line one\nline two\n\nline four"},"plain",3,null,{}]`,
		`{"y":[{"on":{"1":["x","` + long + `"]}}],"z":{"deep":{"deeper":[{"m":"` + long + `"}]}},"n":null}`,
		`[[1,2],[3]]`,
		`{"lists":[[1],[2]],"after":[{"k":"<&>"}]}`,
		`[{"a":{"b":{"c":[{"d":[{"e":"` + long + `","f":"\u00e9 \t tab"}]}]}},"z":[{}]}]`,
	}
	for _, in := range goldenJSON(t) {
		inputs = append(inputs, string(in))
	}
	for _, js := range inputs {
		want, err := yaml.JSONToYAML([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		for _, above := range []int{0, 64} {
			got, err := convertYAML([]byte(js), above)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("split above %d bytes: %.200s:\n%s", above, js, firstDifference(want, got))
			}
		}
	}
}

// goldenJSON renders every type of every golden input as JSON.
func goldenJSON(t *testing.T) [][]byte {
	t.Helper()
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	var out [][]byte
	for _, in := range inputs {
		res, _, err := LoadFiles([]string{in}, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Translate(res, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range Types {
			if typ == "graph" {
				continue // DOT, not JSON
			}
			js, err := Render(r, typ, "json")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, js)
		}
	}
	return out
}

// A route configuration's routes are converted one by one: no piece left
// to convert holds more than one route.
func TestConvertYAMLSplitsLargeValues(t *testing.T) {
	route := `{"match":{"prefix":"/a"},"route":{"cluster":"c"},"name":"r"}`
	js := `[{"gateway":"g","resources":[{"name":"rc","virtual_hosts":[{"name":"v","routes":[` +
		strings.TrimSuffix(strings.Repeat(route+",", 1000), ",") + `]}]}]}]`
	s := &yamlSplitter{above: 1 << 10}
	if err := s.split([]byte(js)); err != nil {
		t.Fatal(err)
	}
	routes := 0
	for _, p := range s.pieces {
		if len(p.js) > len(route)+64 {
			t.Fatalf("a piece of %d bytes of JSON is converted whole: %.100s", len(p.js), p.js)
		}
		if strings.Contains(string(p.js), `"cluster":"c"`) {
			routes++
		}
	}
	if routes != 1000 {
		t.Errorf("%d pieces hold a route, want 1,000", routes)
	}
}

// FuzzConvertYAML: for any JSON, converting piece by piece gives the text
// converting the whole does, or fails where that fails.
func FuzzConvertYAML(f *testing.F) {
	f.Add(`[{"a":1},{"b":[{"c":"d"},{"e":[]}]}]`)
	f.Add(`{"y":[{"on":{"1":["x","a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n o p"]}}],"z":{"d":{"e":[{"m":"\n x"}]}}}`)
	f.Add(`[[1,2],{"k":[{"":null}]}]`)
	f.Fuzz(func(t *testing.T, input string) {
		// The JSON Render converts is encoding/json's: valid UTF-8, no
		// repeated keys, no space around it.
		var v any
		if !utf8.ValidString(input) || json.Unmarshal([]byte(input), &v) != nil {
			return
		}
		js, err := json.Marshal(v)
		if err != nil {
			return
		}
		want, wantErr := yaml.JSONToYAML(js)
		got, err := convertYAML(js, 0)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, converting the whole: %v", js, err, wantErr)
		}
		if err == nil && string(got) != string(want) {
			t.Fatalf("%s:\n%s", js, firstDifference(want, got))
		}
	})
}
