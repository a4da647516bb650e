package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/xds"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func translate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("translate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files, gateways stringList
	fs.Var(&files, "f", "a YAML file of Kubernetes objects, - for standard input (repeatable)")
	fs.Var(&gateways, "gateway", "translate only this Gateway, NAMESPACE/NAME (repeatable); default: every Gateway of a class with --controller-name")
	controllerName := fs.String("controller-name", offline.DefaultControllerName, "the GatewayClass controllerName to translate for")
	typ := fs.String("type", "status", "what to print: "+strings.Join(offline.Types, ", "))
	format := fs.String("o", "yaml", "output format: yaml or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: isobar-controller translate -f FILE... [flags]\n\nTranslates Gateway API objects into Envoy configuration offline, as the controller would.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "translate: give at least one -f FILE")
		return 2
	}
	result, code := translateFiles("translate", files, gateways, *controllerName, true, stderr)
	if result == nil {
		return code
	}
	if len(result.Gateways.Gateways) == 0 {
		fmt.Fprintf(stderr, "translate: no Gateway to translate: none of a GatewayClass with controllerName %s\n", *controllerName)
	}
	out, err := offline.Render(result, *typ, *format)
	if err != nil {
		fmt.Fprintln(stderr, "translate:", err)
		return 2
	}
	_, _ = stdout.Write(out)
	return 0
}

// translateFiles is what translate and explain share: the --gateway
// values checked, the files loaded (duplicates and, when reportSkipped,
// kinds the translator does not read reported on stderr) and translated.
// A nil result comes with the exit code.
func translateFiles(cmd string, files, gateways []string, controllerName string, reportSkipped bool, stderr io.Writer) (*offline.Result, int) {
	opts := offline.Options{ControllerName: controllerName, Settings: xds.DefaultSettings()}
	for _, g := range gateways {
		ns, name, ok := strings.Cut(g, "/")
		if !ok || ns == "" || name == "" {
			fmt.Fprintf(stderr, "%s: --gateway %q: want NAMESPACE/NAME\n", cmd, g)
			return nil, 2
		}
		opts.Gateways = append(opts.Gateways, types.NamespacedName{Namespace: ns, Name: name})
	}
	res, skipped, err := offline.LoadFiles(files)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, 1
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
	return result, 0
}
