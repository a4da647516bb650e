package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// fieldDefault is a default of a CRD's schema: the value (JSON) the API
// server gives a field that an object leaves out, at a path of field
// names, "[]" standing for each item of a list.
type fieldDefault struct {
	path []string
	json string
}

// withDefaults is a JSON object with the defaults applied as the API
// server's structural defaulting applies them: a field is set when it is
// absent and the object that would hold it is present.
func withDefaults(js []byte, defaults []fieldDefault) ([]byte, error) {
	// Numbers stay as written (json.Number), not float64.
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	for _, d := range defaults {
		var v any
		if err := json.Unmarshal([]byte(d.json), &v); err != nil {
			return nil, fmt.Errorf("default of %v: %w", d.path, err)
		}
		setDefault(obj, d.path, v)
	}
	return json.Marshal(obj)
}

func setDefault(node any, path []string, v any) {
	if path[0] == "[]" {
		items, _ := node.([]any)
		for _, item := range items {
			setDefault(item, path[1:], v)
		}
		return
	}
	m, ok := node.(map[string]any)
	if !ok {
		return
	}
	if len(path) == 1 {
		if _, set := m[path[0]]; !set {
			m[path[0]] = v
		}
		return
	}
	if next, ok := m[path[0]]; ok && next != nil {
		setDefault(next, path[1:], v)
	}
}
