package conformance

import (
	"os"
	"testing"

	"isobar.dev/e2e/harness"
)

// TestMain runs the tests in a user namespace of their own when they run
// as an ordinary user: the rig's Pods need network namespaces.
func TestMain(m *testing.M) { os.Exit(harness.Main(m.Run)) }
