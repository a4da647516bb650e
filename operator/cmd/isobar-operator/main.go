// Command isobar-operator is Isobar's Gateway provisioner: for every Gateway
// of a GatewayClass with its controllerName it provisions a fleet, a
// per-Gateway control plane and its Envoy proxies.
package main

import (
	"flag"
	"fmt"
	"os"

	"isobar.dev/api/release"
	"isobar.dev/operator/manager"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println("isobar-operator", release.Version)
		return
	}
	opts := manager.DefaultOptions()
	fs := flag.NewFlagSet("isobar-operator", flag.ContinueOnError)
	opts.Bind(fs)
	version := fs.Bool("version", false, "print the release and exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *version {
		fmt.Println("isobar-operator", release.Version)
		return
	}
	if err := manager.Run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "isobar-operator:", err)
		os.Exit(1)
	}
}
