// Command envoyapi lists which of the fields Isobar sends Envoy (a file of
// protobuf full names, one a line, as TestFieldsSentAreVersioned writes
// it) an earlier release of Envoy's API knows: it builds a program against
// go-control-plane's envoy module of that release, from the module proxy,
// and asks its protobuf registry. Its output is what envoyversion's
// table is checked against, and what the simulated Envoy of that release
// knows:
//
//	go run isobar.dev/hack/envoyapi -version v1.37.0 \
//	    -in controller/pkg/envoyversion/testdata/sent.txt \
//	    -out controller/pkg/envoyversion/releases/known-v1.37.txt
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

const module = "github.com/envoyproxy/go-control-plane/envoy"

func main() {
	version := flag.String("version", "", "the go-control-plane envoy module's release, e.g. v1.37.0")
	in := flag.String("in", "", "the fields Isobar sends, one full name a line")
	out := flag.String("out", "", "where to write those the release knows")
	flag.Parse()
	if err := run(*version, *in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "envoyapi:", err)
		os.Exit(1)
	}
}

func run(version, in, out string) error {
	if version == "" || in == "" || out == "" {
		return fmt.Errorf("-version, -in and -out are required")
	}
	sent, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "envoyapi")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	goVersion := strings.TrimPrefix(strings.Fields(runtimeVersion())[2], "go")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), fmt.Appendf(nil, "module envoyapi\n\ngo %s\n", goVersion), 0o644); err != nil {
		return err
	}
	if _, err := gocmd(dir, nil, "get", module+"@"+version); err != nil {
		return err
	}
	// The Go packages of the proto packages the fields are in; a package
	// the release does not have yet knows none of them.
	var imports []string
	for _, pkg := range protoPackages(string(sent)) {
		path := module + "/" + strings.ReplaceAll(strings.TrimPrefix(pkg, "envoy."), ".", "/")
		if _, err := gocmd(dir, nil, "list", path); err == nil {
			imports = append(imports, path)
		}
	}
	var src bytes.Buffer
	src.WriteString("package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n\n\t\"google.golang.org/protobuf/reflect/protoreflect\"\n\t\"google.golang.org/protobuf/reflect/protoregistry\"\n")
	for _, p := range imports {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(program)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src.Bytes(), 0o644); err != nil {
		return err
	}
	if _, err := gocmd(dir, nil, "mod", "tidy"); err != nil {
		return err
	}
	known, err := gocmd(dir, sent, "run", ".")
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# The fields of sent.txt that %s %s knows (go run isobar.dev/hack/envoyapi).\n", module, version)
	return os.WriteFile(out, append([]byte(header), known...), 0o644)
}

// program answers, for each full name on standard input, whether the
// registry has a message with that field, and prints those it does.
const program = `)

func main() {
	s := bufio.NewScanner(os.Stdin)
	for s.Scan() {
		name := strings.TrimSpace(s.Text())
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		// A field is known when its message has it; a message packed in
		// an Any, or an enum value, when the registry has it.
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err == nil {
			fmt.Println(name)
			continue
		}
		i := strings.LastIndex(name, ".")
		if i < 0 {
			continue
		}
		d, err = protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name[:i]))
		if m, ok := d.(protoreflect.MessageDescriptor); err == nil && ok && m.Fields().ByName(protoreflect.Name(name[i+1:])) != nil {
			fmt.Println(name)
		}
	}
}
`

// protoPackages are the Envoy proto packages of full names: the parts
// before the first capitalized one (a message).
func protoPackages(names string) []string {
	var out []string
	for line := range strings.Lines(names) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "envoy.") {
			continue
		}
		var pkg []string
		for part := range strings.SplitSeq(line, ".") {
			if part != "" && unicode.IsUpper(rune(part[0])) {
				break
			}
			pkg = append(pkg, part)
		}
		if p := strings.Join(pkg, "."); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func gocmd(dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func runtimeVersion() string {
	out, err := exec.Command("go", "version").Output()
	if err != nil {
		return "go version go1.26 unknown"
	}
	return string(out)
}
