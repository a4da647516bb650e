package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"isobar.dev/api/fleet"
	"isobar.dev/controller/pkg/bootstrap"
)

// Where the operator mounts the fleet's files in Envoy pods, below
// v1alpha1.ReservedMountPrefix.
const (
	defaultCertsDir  = fleet.CertsDir
	defaultOutputDir = "/var/run/isobar/bootstrap"
)

func bootstrapCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bootstrap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := bootstrap.Config{}
	fs.StringVar(&c.NodeID, "node-id", os.Getenv("POD_NAME"), "this Envoy's node id (default: $POD_NAME)")
	fs.StringVar(&c.Cluster, "cluster", "", "the fleet's name: the Gateway as NAMESPACE/NAME")
	fs.StringVar(&c.XDSAddress, "xds-address", "", "DNS name of the controller Service")
	fs.StringVar(&c.XDSServerName, "xds-server-name", "", "name in the controller's certificate (default: --xds-address)")
	fs.StringVar(&c.CertsDir, "certs-dir", defaultCertsDir, "directory with tls.crt, tls.key and ca.crt for the xDS connection")
	fs.StringVar(&c.OutputDir, "output-dir", defaultOutputDir, "directory to write "+bootstrap.BootstrapFile+" and the SDS files into")
	fs.Uint64Var(&c.MaxHeapBytes, "max-heap-bytes", 0, "turn on Envoy's overload manager for this heap size; 0 leaves it off")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.XDSServerName == "" {
		c.XDSServerName = c.XDSAddress
	}
	if err := bootstrap.Write(c); err != nil {
		fmt.Fprintln(stderr, "bootstrap:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s/%s\n", c.OutputDir, bootstrap.BootstrapFile)
	return 0
}
