// Package conformance runs the official Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, the release we build against)
// against Isobar: the real operator and controllers on a real API server,
// etcd and kube-controller-manager, with a node agent for a kubelet,
// simulated Envoys that follow the bootstraps our fleets write and proxy
// real connections, and upstream's echo servers as the backends. The
// suite uses its own clients.
//
// `make test` and `make conformance` run every test of the profiles
// (ISOBAR_CONFORMANCE unset or "all"); "status" runs only the tests that
// check status, a quicker check while working on status. A full run writes
// the suite's report and the list of tests to $ISOBAR_CONFORMANCE_REPORTS
// and is checked against the committed ones (reports.go); `make
// conformance` writes those.
package conformance

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwconformance "sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"isobar.dev/e2e/harness"
	"isobar.dev/e2e/rig"
)

const (
	controllerName   = rig.ControllerName
	gatewayClassName = rig.GatewayClassName
	// modeVariable chooses which tests run: "all" (the default) or
	// "status".
	modeVariable = "ISOBAR_CONFORMANCE"
	// testVariable runs some tests of the suite alone: their ShortNames,
	// separated by commas.
	testVariable = "ISOBAR_CONFORMANCE_TEST"
)

var profiles = []suite.ConformanceProfileName{
	suite.GatewayHTTPConformanceProfileName,
	suite.GatewayTLSConformanceProfileName,
	suite.GatewayGRPCConformanceProfileName,
	suite.GatewayTCPConformanceProfileName,
	suite.GatewayUDPConformanceProfileName,
}

func TestConformance(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	mode := os.Getenv(modeVariable)
	if mode == "" {
		mode = "all"
	}
	if mode != "status" && mode != "all" {
		t.Fatalf("%s=%q: want status or all", modeVariable, mode)
	}
	r := rig.Start(t)

	var skip []string
	if mode == "status" {
		var err error
		if skip, err = trafficTests(tests.ConformanceTests); err != nil {
			t.Fatal(err)
		}
	}
	if only := os.Getenv(testVariable); only != "" {
		run := map[string]bool{}
		for _, name := range strings.Split(only, ",") {
			run[strings.TrimSpace(name)] = true
		}
		for _, ct := range tests.ConformanceTests {
			if !run[ct.ShortName] {
				skip = append(skip, ct.ShortName)
			}
		}
	}
	// The suite makes a new client for every test from ClientOptions.
	clientOptions := client.Options{Scheme: r.Env.Client.Scheme()}
	c, err := client.New(r.Env.Config, clientOptions)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(r.Fleet.Logs.Wrap(r.Env.Config))
	if err != nil {
		t.Fatal(err)
	}
	opts := suite.ConformanceOptions{
		Client:        c,
		ClientOptions: clientOptions,
		Clientset:     cs,
		// The suite builds its clients from RestConfig for every test; Pod
		// logs come from the rig's echo backends.
		RestConfig: r.Fleet.Logs.Wrap(r.Env.Config),
		// No RoundTripper, GRPCClient or WebSocketDialer: the suite's
		// own clients, over real connections to the Gateways' addresses.
		ManifestFS: []fs.FS{gwconformance.Manifests},
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     gatewayClassName,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			SkipTests:            skip,
			// GatewayStaticAddresses: the rig's Envoy Services are
			// ClusterIP Services, which take a documentation address as an
			// external IP; the API server refuses a link-local one.
			UsableNetworkAddresses:   []gatewayv1.GatewaySpecAddress{{Type: ptr.To(gatewayv1.IPAddressType), Value: "192.0.2.10"}},
			UnusableNetworkAddresses: []gatewayv1.GatewaySpecAddress{{Type: ptr.To(gatewayv1.IPAddressType), Value: "169.254.0.10"}},
			ConformanceProfiles:      profiles,
			Mode:                     "simulated-envoy",
			Implementation: confv1.Implementation{
				Organization: "isobar", Project: "isobar", URL: "https://isobar.dev", Version: "main",
				Contact: []string{"https://isobar.dev"},
			},
		},
	}
	s, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	all := rec.wrap(tests.ConformanceTests)
	// The suite marks its run finished in a cleanup of Run's; this one,
	// registered first, runs after it.
	t.Cleanup(func() { report(t, s, mode, r.Env.Channel, len(skip), rec.list(all)) })
	s.Setup(t, all)
	if err := s.Run(t, all); err != nil {
		t.Fatal(err)
	}
}

// report logs the suite's results, writes its report and the list of
// tests where $ISOBAR_CONFORMANCE_REPORTS says, and checks a full run
// against the reports committed in the repository (unless it writes
// them).
func report(t *testing.T, s *suite.ConformanceTestSuite, mode, channel string, skipped int, records []testRecord) {
	rep, err := s.Report()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance (%s, %s channel, %d tests skipped by the rig):\n%s", mode, channel, skipped, summary(rep))
	dir := os.Getenv(reportVariable)
	if dir != "" {
		if err := writeReports(dir, channel, mode, rep, records); err != nil {
			t.Fatal(err)
		}
		t.Logf("report and test list written to %s", dir)
	}
	if mode != "all" || os.Getenv(testVariable) != "" {
		return
	}
	if root, err := harness.RepoRoot(); err == nil && filepath.Clean(dir) == filepath.Join(root, committedReports) {
		return // this run writes the committed reports
	}
	if err := checkCommitted(channel, mode, rep, records); err != nil {
		t.Error(err)
	}
}

// summary lists each profile's counts and its failed and skipped tests.
func summary(r *confv1.ConformanceReport) string {
	var b strings.Builder
	for _, p := range r.ProfileReports {
		fmt.Fprintf(&b, "%s: core %s (passed %d, failed %d, skipped %d)", p.Name, p.Core.Result, p.Core.Passed, p.Core.Failed, p.Core.Skipped)
		if p.Extended != nil {
			fmt.Fprintf(&b, ", extended %s (passed %d, failed %d, skipped %d)", p.Extended.Result, p.Extended.Passed, p.Extended.Failed, p.Extended.Skipped)
		}
		b.WriteString("\n")
		for _, s := range []struct {
			what  string
			names []string
		}{{"failed", p.Core.FailedTests}, {"skipped", p.Core.SkippedTests}} {
			if len(s.names) > 0 {
				fmt.Fprintf(&b, "  core %s: %s\n", s.what, strings.Join(s.names, ", "))
			}
		}
		if p.Extended != nil {
			for _, s := range []struct {
				what  string
				names []string
			}{{"failed", p.Extended.FailedTests}, {"skipped", p.Extended.SkippedTests}} {
				if len(s.names) > 0 {
					fmt.Fprintf(&b, "  extended %s: %s\n", s.what, strings.Join(s.names, ", "))
				}
			}
		}
	}
	return b.String()
}
