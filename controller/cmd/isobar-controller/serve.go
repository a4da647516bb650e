package main

import (
	"flag"
	"fmt"
	"io"

	ctrl "sigs.k8s.io/controller-runtime"

	"isobar.dev/controller/pkg/serve"
)

func serveFlags(stderr io.Writer) (*flag.FlagSet, *serve.Options) {
	o := serve.DefaultOptions()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Bind(fs)
	return fs, &o
}

func serveCmd(args []string, stderr io.Writer) int {
	fs, opts := serveFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o := *opts
	if err := serve.Run(ctrl.SetupSignalHandler(), o); err != nil {
		fmt.Fprintln(stderr, "serve:", err)
		return 1
	}
	return 0
}
