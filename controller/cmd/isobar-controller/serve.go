package main

import (
	"flag"
	"fmt"
	"io"

	ctrl "sigs.k8s.io/controller-runtime"

	"isobar.dev/controller/pkg/serve"
)

func serveCmd(args []string, stderr io.Writer) int {
	o := serve.DefaultOptions()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := serve.Run(ctrl.SetupSignalHandler(), o); err != nil {
		fmt.Fprintln(stderr, "serve:", err)
		return 1
	}
	return 0
}
