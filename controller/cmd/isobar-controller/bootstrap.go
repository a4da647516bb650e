package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"isobar.dev/api/fleet"
	"isobar.dev/api/ports"
	"isobar.dev/controller/pkg/bootstrap"
)

// Where the operator mounts the fleet's files in Envoy pods, below
// v1alpha1.ReservedMountPrefix.
const (
	defaultCertsDir  = fleet.CertsDir
	defaultOutputDir = "/var/run/isobar/bootstrap"
)

func bootstrapFlags(stderr io.Writer) (*flag.FlagSet, *bootstrap.Config) {
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
	fs.Uint64Var(&c.MaxDownstreamConnections, "max-downstream-connections", 0, "the most client connections Envoy holds at once over all listeners but admin and stats; 0 for no limit")
	fs.BoolVar(&c.OMEnforcedHealth, "om-enforced-health", false, fmt.Sprintf("open /ready on port %d, counted against --max-downstream-connections (for a load balancer's health check)", ports.EnvoyOverloadHealth))
	fs.Func("max-requests-per-io-cycle", "the most requests Envoy processes per event loop iteration (runtime http.max_requests_per_io_cycle); unset for Envoy's default", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return fmt.Errorf("want a positive number")
		}
		c.MaxRequestsPerIOCycle = uint32(n)
		return nil
	})
	fs.Func("runtime", "KEY=VALUE: an Envoy runtime key's value in the static layer (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE")
		}
		if c.Runtime == nil {
			c.Runtime = map[string]string{}
		}
		c.Runtime[k] = val
		return nil
	})
	return fs, &c
}

func bootstrapCmd(args []string, stdout, stderr io.Writer) int {
	fs, cfg := bootstrapFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c := *cfg
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
