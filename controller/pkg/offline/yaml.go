package offline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"
)

// splitAbove is the size of JSON above which toYAML converts an array's
// items or an object's fields one by one.
const splitAbove = 64 << 10

// toYAML converts rendered JSON to YAML: the text yaml.JSONToYAML gives for
// the whole (line wrapping included), without converting the whole as one
// document. go-yaml holds a document as a tree of maps, many times the
// size of its text, and a route configuration of 100,000 routes is one
// item of hundreds of megabytes. Here each large array's
// items and each large object's fields are converted on their own, in a
// wrapper that puts them at the indentation they have in the whole, on
// every core, and the pieces joined in order.
func toYAML(js []byte) ([]byte, error) {
	return convertYAML(js, splitAbove)
}

// step is one level of where a value sits in the document.
type step byte

const (
	inList step = iota // an item of a sequence
	inMap              // the value of a mapping's key
)

// yamlPiece is part of the output: text already converted, or JSON to
// convert in a wrapper whose first skip lines are the wrapper's.
type yamlPiece struct {
	text []byte
	js   []byte
	skip int
}

type yamlSplitter struct {
	above  int
	pieces []yamlPiece
}

func convertYAML(js []byte, above int) ([]byte, error) {
	// A placeholder's text in the input would be mistaken for one.
	if len(js) <= above || bytes.Contains(js, []byte(placeholderPrefix)) {
		return yaml.JSONToYAML(js)
	}
	s := &yamlSplitter{above: above}
	if err := s.split(js); err != nil {
		return nil, err
	}
	return s.join()
}

// split adds the pieces of a document.
func (s *yamlSplitter) split(js []byte) error {
	var items []json.RawMessage
	if js[0] != '[' || json.Unmarshal(js, &items) != nil || len(items) == 0 || anyArray(items) {
		return s.value(js, nil)
	}
	for _, item := range items {
		if err := s.value(item, []step{inList}); err != nil {
			return err
		}
	}
	return nil
}

// value adds the pieces of v, which sits at path.
func (s *yamlSplitter) value(v json.RawMessage, path []step) error {
	var fields map[string]json.RawMessage
	if len(v) <= s.above || v[0] != '{' || json.Unmarshal(v, &fields) != nil {
		s.pieces = append(s.pieces, yamlPiece{js: wrapJSON(v, path), skip: depth(path)})
		return nil
	}
	// Each large field is replaced by a placeholder, converted on its own
	// and put where its placeholder's line was.
	var split []largeField
	for k, f := range fields {
		if len(f) <= s.above {
			continue
		}
		if lf, ok := splitField(f); ok {
			split = append(split, lf)
			fields[k] = json.RawMessage(fmt.Sprintf("%q", placeholder(len(split)-1)))
		}
	}
	if len(split) == 0 {
		s.pieces = append(s.pieces, yamlPiece{js: wrapJSON(v, path), skip: depth(path)})
		return nil
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	text, err := convertWrapped(wrapJSON(rest, path), depth(path))
	if err != nil {
		return err
	}
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		i := placeholderIn(line, len(split))
		if i < 0 {
			s.pieces = append(s.pieces, yamlPiece{text: line})
			continue
		}
		// "key: placeholder" becomes "key:", and the field's YAML follows.
		key := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte(" "+placeholder(i)))
		// A copy: key is part of the converted text, which appending to it
		// would write over.
		s.pieces = append(s.pieces, yamlPiece{text: append(slices.Clip(key), '\n')})
		if err := s.field(split[i], path); err != nil {
			return err
		}
	}
	return nil
}

// field adds the pieces of a large field of an object at path: an array
// item by item, an object as a value.
func (s *yamlSplitter) field(f largeField, path []step) error {
	inner := append(append([]step{}, path...), inMap)
	if f.object != nil {
		return s.value(f.object, inner)
	}
	for _, item := range f.items {
		if err := s.value(item, append(inner, inList)); err != nil {
			return err
		}
	}
	return nil
}

// largeField is a field of an object converted apart: an object, or an
// array's items, parsed once.
type largeField struct {
	object json.RawMessage
	items  []json.RawMessage
}

// splitField reports whether a field's YAML is block lines below its key
// that can be converted apart: a non-empty object, or a non-empty array of
// anything but arrays (a sequence in a sequence starts on its parent's
// line).
func splitField(f json.RawMessage) (largeField, bool) {
	switch f[0] {
	case '{':
		return largeField{object: f}, len(bytes.TrimSpace(f[1:len(f)-1])) > 0
	case '[':
		var items []json.RawMessage
		ok := json.Unmarshal(f, &items) == nil && len(items) > 0 && !anyArray(items)
		return largeField{items: items}, ok
	}
	return largeField{}, false
}

func anyArray(items []json.RawMessage) bool {
	for _, item := range items {
		if len(item) > 0 && item[0] == '[' {
			return true
		}
	}
	return false
}

const placeholderPrefix = "isobar-yaml-split-"

func placeholder(i int) string { return fmt.Sprint(placeholderPrefix, i) }

// placeholderIn returns which of n placeholders line ends with, or -1.
func placeholderIn(line []byte, n int) int {
	line = bytes.TrimSuffix(line, []byte("\n"))
	for i := range n {
		if bytes.HasSuffix(line, []byte(": "+placeholder(i))) {
			return i
		}
	}
	return -1
}

// wrapJSON puts v at path in a document of its own: each mapping key
// "a", whose value starts on a line of its own, and each sequence of one
// item. go-yaml indents v there as it does in the whole document.
func wrapJSON(v json.RawMessage, path []step) []byte {
	var b bytes.Buffer
	for _, p := range path {
		if p == inList {
			b.WriteByte('[')
		} else {
			b.WriteString(`{"a":`)
		}
	}
	b.Write(v)
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == inList {
			b.WriteByte(']')
		} else {
			b.WriteByte('}')
		}
	}
	return b.Bytes()
}

// depth is how many lines the wrapper of path adds before its value: one
// per key ("a:"); a sequence's "- " shares the line of what it holds.
func depth(path []step) int {
	n := 0
	for _, p := range path {
		if p == inMap {
			n++
		}
	}
	return n
}

func convertWrapped(js []byte, skip int) ([]byte, error) {
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	for range skip {
		i := bytes.IndexByte(y, '\n')
		if i < 0 {
			return nil, fmt.Errorf("converting to YAML: a wrapper of %d lines gave %q", skip, y)
		}
		y = y[i+1:]
	}
	return y, nil
}

// join converts the pieces still JSON, on every core, and joins them all.
func (s *yamlSplitter) join() ([]byte, error) {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range s.pieces {
		p := &s.pieces[i]
		if p.js == nil {
			continue
		}
		g.Go(func() error {
			var err error
			p.text, err = convertWrapped(p.js, p.skip)
			p.js = nil
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	size := 0
	for _, p := range s.pieces {
		size += len(p.text)
	}
	out := make([]byte, 0, size)
	for _, p := range s.pieces {
		out = append(out, p.text...)
	}
	return out, nil
}
