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
	if os.Getenv(tetherChild) != "" {
		// The copy of the test binary TestChildrenDieWithTheTestBinary
		// kills needs no cluster.
		os.Exit(m.Run())
	}
	var err error
	env, err = harness.Start(harness.Options{ControllerManager: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test environment:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
