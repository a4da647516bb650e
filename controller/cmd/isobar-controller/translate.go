package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/offline"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// translateArgs are translate's flags.
type translateArgs struct {
	files, gateways                        stringList
	controllerName, namespace, typ, format *string
}

func translateFlags(stderr io.Writer) (*flag.FlagSet, *translateArgs) {
	fs := flag.NewFlagSet("translate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := &translateArgs{}
	fs.Var(&a.files, "f", "a YAML file of Kubernetes objects, - for standard input (repeatable)")
	fs.Var(&a.gateways, "gateway", "translate only this Gateway, NAMESPACE/NAME (repeatable); default: every Gateway of a class with --controller-name")
	a.controllerName = fs.String("controller-name", offline.DefaultControllerName, "the GatewayClass controllerName to translate for")
	a.namespace = fs.String("namespace", "default", "the namespace of namespaced objects that name none, as kubectl's")
	a.typ = fs.String("type", "status", "what to print: "+strings.Join(offline.Types, ", "))
	a.format = fs.String("o", "yaml", "output format: yaml or json; dot for --type graph")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: isobar-controller translate -f FILE... [flags]\n\nTranslates Gateway API objects into Envoy configuration offline, as the controller would.\n\n")
		fs.PrintDefaults()
	}
	return fs, a
}

// translate translates files and prints what --type names.
func translate(args []string, stdout, stderr io.Writer) int {
	fs, a := translateFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files, gateways, controllerName, namespace, typ, format := a.files, a.gateways, a.controllerName, a.namespace, a.typ, a.format
	if len(files) == 0 {
		fmt.Fprintln(stderr, "translate: give at least one -f FILE")
		return 2
	}
	result, code := translateFiles("translate", files, gateways, *controllerName, *namespace, true, stderr)
	if result == nil {
		return code
	}
	if len(result.Gateways.Gateways) == 0 && len(gateways) == 0 {
		fmt.Fprintf(stderr, "translate: no Gateway to translate: none of a GatewayClass with controllerName %s\n", *controllerName)
	}
	out, err := offline.Render(result, *typ, *format)
	if err != nil {
		fmt.Fprintln(stderr, "translate:", err)
		return 2
	}
	_, _ = stdout.Write(out)
	return code
}

// translateFiles is what translate and explain share: the --gateway
// values checked, the files loaded (duplicates and, when reportSkipped,
// kinds the translator does not read reported on stderr) and translated.
// A nil result comes with the exit code; input that could not be read, or
// a --gateway that is not in it, is reported and makes the code 1, and
// the rest is translated.
func translateFiles(cmd string, files, gateways []string, controllerName, namespace string, reportSkipped bool, stderr io.Writer) (*offline.Result, int) {
	opts := offline.Options{ControllerName: controllerName}
	for _, g := range gateways {
		ns, name, ok := strings.Cut(g, "/")
		if !ok || ns == "" || name == "" {
			fmt.Fprintf(stderr, "%s: --gateway %q: want NAMESPACE/NAME\n", cmd, g)
			return nil, 2
		}
		opts.Gateways = append(opts.Gateways, types.NamespacedName{Namespace: ns, Name: name})
	}
	code := 0
	res, skipped, err := offline.LoadFiles(files, namespace)
	if res == nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, 1
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "%s: %s\n", cmd, line)
		}
		fmt.Fprintf(stderr, "%s: translating the rest\n", cmd)
		code = 1
	}
	for _, d := range res.Replaced {
		fmt.Fprintf(stderr, "%s: %s is defined more than once; the last definition is used\n", cmd, d)
	}
	if reportSkipped {
		for _, s := range skipped {
			fmt.Fprintf(stderr, "%s: %s: ignoring %s %s, which the translator does not read\n", cmd, s.Source, s.TypeMeta.APIVersion, s.TypeMeta.Kind)
		}
	}
	result, err := offline.Translate(res, opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, 1
	}
	for _, n := range result.Notes {
		fmt.Fprintf(stderr, "%s: %s\n", cmd, n)
	}
	for _, g := range opts.Gateways {
		if !slices.ContainsFunc(result.Gateways.Gateways, func(tr *ir.Gateway) bool { return tr.Name == g.String() }) {
			fmt.Fprintf(stderr, "%s: --gateway %s: no such Gateway in the input\n", cmd, g)
			code = 1
		}
	}
	return result, code
}
