package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"isobar.dev/controller/pkg/contourconfig"
	"isobar.dev/controller/pkg/offline"
)

// convertArgs are convert contour's flags.
type convertArgs struct {
	file, namespace, name, class, controllerName *string
}

func convertFlags(stderr io.Writer) (*flag.FlagSet, *convertArgs) {
	fs := flag.NewFlagSet("convert contour", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := &convertArgs{}
	a.file = fs.String("f", "", "a YAML file with Contour's ContourConfiguration or ContourDeployment (projectcontour.io/v1alpha1), its contour.yaml, or the ConfigMap holding it; - for standard input")
	a.namespace = fs.String("namespace", "projectcontour", "the namespace of the profile and the Gateway")
	a.name = fs.String("name", "contour", "the name of the profile and the Gateway")
	a.class = fs.String("gateway-class", "isobar", "the name of the GatewayClass")
	a.controllerName = fs.String("controller-name", offline.DefaultControllerName, "the GatewayClass's and IngressClasses' controllerName")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: isobar-controller convert contour -f FILE [flags]\n\n"+
			"Writes the Isobar profile (ContourDeployment, isobar.dev/v1alpha1), GatewayClass, Gateway and IngressClasses\n"+
			"that serve a Contour install's HTTPProxies and Ingresses as its configuration did. Every setting that is not\n"+
			"carried over is listed on standard error with the reason.\n\n")
		fs.PrintDefaults()
	}
	return fs, a
}

// convert turns a Contour install's configuration into Isobar objects:
// the profile, the GatewayClass, a Gateway with the HTTPProxy and Ingress
// listeners, and the IngressClasses. What it does not carry goes to
// standard error, each with its reason.
func convert(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "contour" {
		fmt.Fprintln(stderr, "Usage: isobar-controller convert contour -f FILE [flags]")
		return 2
	}
	fs, a := convertFlags(stderr)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	file, namespace, name, class, controllerName := a.file, a.namespace, a.name, a.class, a.controllerName
	if *file == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "convert contour: give one -f FILE")
		return 2
	}
	var data []byte
	var err error
	if *file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintln(stderr, "convert contour:", err)
		return 1
	}
	sources, err := contourconfig.Parse(*file, data)
	if err != nil {
		fmt.Fprintln(stderr, "convert contour:", err)
		return 1
	}
	if len(sources) > 1 {
		fmt.Fprintf(stderr, "convert contour: %s holds %d configurations; convert one at a time\n", *file, len(sources))
		return 1
	}
	res, err := contourconfig.Convert(sources[0], contourconfig.Options{
		Namespace: *namespace, Name: *name, GatewayClass: *class, ControllerName: *controllerName,
	})
	if err != nil {
		fmt.Fprintln(stderr, "convert contour:", err)
		return 1
	}
	objects := []any{res.Profile, res.GatewayClass, res.Gateway}
	for _, c := range res.IngressClasses {
		objects = append(objects, c)
	}
	for i, o := range objects {
		pruned, err := contourconfig.Prune(o)
		if err != nil {
			fmt.Fprintln(stderr, "convert contour:", err)
			return 1
		}
		b, err := yaml.Marshal(pruned)
		if err != nil {
			fmt.Fprintln(stderr, "convert contour:", err)
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		_, _ = stdout.Write(b)
	}
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, n)
	}
	return 0
}
