// Command isobar-controller is Isobar's per-Gateway control plane. The
// operator runs one per Gateway; its subcommands share one translator.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"isobar.dev/api/release"
)

const usage = `isobar-controller: Isobar's per-Gateway control plane

Usage:
  isobar-controller serve [--gateway NS/NAME | --controller-name NAME] [--envoy-service NAME] [--xds-cert-file ...]
                               serve the Gateway's Envoy fleet over xDS and write its status
  isobar-controller translate -f FILE|DIR... [--gateway NS/NAME] [--type TYPE] [-o yaml|json]
                               translate Gateway API YAML into Envoy configuration offline
  isobar-controller explain -f FILE|DIR... --request '[METHOD] URL' [-H 'Name: value']... [-o text|yaml|json]
                               show what the Gateway's Envoy does with a request (simulated)
  isobar-controller convert contour -f FILE [--namespace NS] [--name NAME] [--gateway-class NAME]
                               turn Contour's ContourConfiguration, ContourDeployment or contour.yaml into an Isobar profile,
                               GatewayClass, Gateway and IngressClasses; what is not carried goes to stderr
  isobar-controller bootstrap --cluster NS/NAME --xds-address HOST [--node-id ID] [--certs-dir DIR] [--output-dir DIR]
                               write an Envoy bootstrap for the fleet (run by Envoy pods' init container)
  isobar-controller drain [--listen :8004] [--admin-address 127.0.0.1:9001] [--timeout 60s]
                               serve the Envoy pod's preStop hook that drains Envoy before it stops
  isobar-controller version    print the release and the Go modules it was built from (also --version)
  isobar-controller completion bash|zsh
                               print a shell completion script: source <(isobar-controller completion bash)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "translate":
		return translate(args[1:], stdout, stderr)
	case "explain":
		return explain(args[1:], stdout, stderr)
	case "convert":
		return convert(args[1:], stdout, stderr)
	case "serve":
		return serveCmd(args[1:], stderr)
	case "drain":
		return drainCmd(args[1:], stderr)
	case "bootstrap":
		return bootstrapCmd(args[1:], stdout, stderr)
	case "version", "--version":
		return version(stdout)
	case "completion":
		return completion(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "isobar-controller: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func version(w io.Writer) int {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, "isobar-controller", release.Version)
		return 0
	}
	fmt.Fprintf(w, "isobar-controller %s (%s)\n", release.Version, info.GoVersion)
	for _, dep := range info.Deps {
		fmt.Fprintf(w, "  %s %s\n", dep.Path, dep.Version)
	}
	return 0
}
