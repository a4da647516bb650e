// Command demo shows Isobar working on a machine with only Go: a real
// kube-apiserver, etcd and kube-controller-manager (the test assets), the
// operator, config/samples, and, because there is no kubelet, the
// per-Gateway controller run as a process exactly as the operator's
// Deployment describes it, plus a simulated Envoy (the xDS client and the
// envoysim simulator, clearly labelled) that lets the Gateway become
// Programmed. `make demo` runs it; it stops cleanly on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	once := flag.Bool("once", false, "print the report and exit instead of waiting for Ctrl-C")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long to wait for the Gateway to become Programmed")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *once, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, once bool, timeout time.Duration) (err error) {
	d := &demo{out: out}
	defer func() {
		if err != nil {
			// The logs live in the cluster's scratch directory, which
			// close removes: keep them where the error can name them.
			if dir, kerr := d.keepLogs(); kerr == nil && dir != "" {
				err = fmt.Errorf("%w (the processes' logs are kept in %s)", err, dir)
			}
		}
		if cerr := d.close(); err == nil {
			err = cerr
		}
	}()
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"starting kube-apiserver, etcd and kube-controller-manager (a first run builds them from Go modules, about 20 minutes on two cores; later runs take seconds)", d.startCluster},
		{"building and starting isobar-operator (a first build takes a few minutes)", d.startOperator},
		{"applying config/samples, with the Services, endpoints and certificate they refer to", d.applySamples},
		{"waiting for the operator to provision the fleet", d.waitForFleet},
		{"running the per-Gateway controller as its Deployment describes it", d.runController},
		{"connecting a simulated Envoy with the fleet's client certificate", d.connectEnvoy},
		{"waiting for the Gateway to become Programmed", d.waitProgrammed},
	}
	stepsCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, s := range steps {
		start := time.Now()
		fmt.Fprintf(out, "==> %s\n", s.what)
		if err := s.do(stepsCtx); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
		fmt.Fprintf(out, "    done in %s\n", time.Since(start).Round(10*time.Millisecond))
	}
	if err := d.report(context.Background()); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nNext: ask what Envoy does with a request, from YAML alone:\n"+
		"  go run ./controller/cmd/isobar-controller explain -f config/samples --request 'GET http://app.example.com/api/users'\n"+
		"  try examples/ (an HTTPProxy tree, an Ingress, a Gateway API set), and docs/install.md for a real cluster.")
	if once {
		return nil
	}
	fmt.Fprintln(out, "\nThe cluster keeps running; kubeconfig:", d.kubeconfig, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(out, "Stopping the fleet and the cluster.")
	return nil
}
