// Package e2e runs Isobar against a real kube-apiserver, etcd and
// kube-controller-manager (see package harness).
package e2e

import (
	"fmt"
	"os"
	"testing"

	"isobar.dev/e2e/harness"
)

// env is shared by every test of the package; tests isolate themselves with
// namespaces.
var env *harness.Env

func TestMain(m *testing.M) {
	os.Exit(harness.Main(func() int { return run(m) }))
}

// run starts the test environment, runs the tests and stops it.
func run(m *testing.M) int {
	if os.Getenv(tetherChild) != "" {
		// The copy of the test binary TestChildrenDieWithTheTestBinary
		// kills needs no cluster.
		return m.Run()
	}
	var err error
	env, err = harness.Start(harness.Options{ControllerManager: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test environment:", err)
		return 1
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
