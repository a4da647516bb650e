package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"isobar.dev/controller/pkg/drain"
)

// drainCmd runs the Envoy pod's shutdown hook server until SIGTERM.
// drainArgs are drain's flags.
type drainArgs struct {
	listen, admin, strategy *string
	minDuration, timeout    *time.Duration
}

func drainFlags(stderr io.Writer) (*flag.FlagSet, *drainArgs) {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := &drainArgs{}
	a.listen = fs.String("listen", ":8004", "address of the /shutdown hook")
	a.admin = fs.String("admin-address", "127.0.0.1:9001", "Envoy's admin address")
	a.strategy = fs.String("strategy", "gradual", "gradual or immediate")
	a.minDuration = fs.Duration("min-duration", 5*time.Second, "drain at least this long")
	a.timeout = fs.Duration("timeout", 60*time.Second, "drain at most this long")
	return fs, a
}

func drainCmd(args []string, stderr io.Writer) int {
	fs, a := drainFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	listen, admin, strategy, minDuration, timeout := a.listen, a.admin, a.strategy, a.minDuration, a.timeout
	if *strategy != "gradual" && *strategy != "immediate" {
		fmt.Fprintf(stderr, "drain: --strategy %q: want gradual or immediate\n", *strategy)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Addr: *listen, ReadHeaderTimeout: 5 * time.Second, Handler: drain.NewHandler(drain.Options{
		Admin: *admin, Gradual: *strategy == "gradual", MinDuration: *minDuration, Timeout: *timeout,
	})}
	go func() {
		<-ctx.Done()
		// The hook may still be waiting; give it the drain's time.
		shutdown, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "drain:", err)
		return 1
	}
	return 0
}
