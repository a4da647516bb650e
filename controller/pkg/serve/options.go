// Package serve is `isobar-controller serve`: the per-Gateway control plane.
// It watches its Gateway and everything that attaches to it, translates them
// (package translate, then xds), serves the result to its Envoy fleet over
// ADS with mutual TLS (package xdsserver), and writes status. Every replica
// translates and serves xDS; only the leader writes status.
package serve

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"isobar.dev/api/fleet"
	"isobar.dev/api/kubeconfig"
	"isobar.dev/api/logs"
	"isobar.dev/api/ports"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/offline"
	"isobar.dev/controller/pkg/xds"
)

// Options are serve's flags.
type Options struct {
	Gateway        types.NamespacedName
	ControllerName string
	// EnvoyService names the Service whose addresses become the Gateway's
	// status.addresses: NAME in the Gateway's namespace, or NAMESPACE/NAME.
	EnvoyService string

	XDSAddress        string
	CertFile, KeyFile string
	CAFile            string
	HealthAddress     string
	MetricsAddress    string
	// Profiling serves Go's profiles under /debug/pprof/ on the metrics
	// address.
	Profiling        bool
	LeaderElect      bool
	LeaderElectionNS string
	// UpdateDelay is how long changes must be quiet before a translation;
	// MaxUpdateDelay bounds the wait after the first change.
	UpdateDelay, MaxUpdateDelay time.Duration
	// FirstPushes bounds how many Envoys are sent their first
	// configuration at once (xdsserver.Options); the replica is not ready
	// while more than that many wait for one.
	FirstPushes int
	// Runtime are the profile's runtimeSettings, which translation reads
	// what it needs of (translate.Options.Profile).
	Runtime v1alpha1.RuntimeSettings
	// IngressStatusAddress, when set, is the address Ingresses' status
	// gives instead of the Gateway's (runtimeSettings.ingress).
	IngressStatusAddress string
	// KindsInterval is how often the served Gateway API kinds are checked
	// again; a change restarts the controller.
	KindsInterval       time.Duration
	LogLevel, LogFormat string
	// RuntimeSettingsFile holds a ContourDeployment's runtimeSettings as
	// JSON (the operator mounts it from a ConfigMap).
	RuntimeSettingsFile string
	// Kubeconfig is the kubeconfig file of the cluster; "" finds the
	// cluster as kubectl does (package kubeconfig).
	Kubeconfig string
}

// DefaultOptions are what the operator's Deployment relies on.
func DefaultOptions() Options {
	return Options{
		ControllerName: offline.DefaultControllerName,
		XDSAddress:     fmt.Sprintf(":%d", ports.XDS),
		CertFile:       path.Join(fleet.CertsDir, fleet.CertKey),
		KeyFile:        path.Join(fleet.CertsDir, fleet.KeyKey),
		CAFile:         path.Join(fleet.CertsDir, fleet.CAKey),
		HealthAddress:  fmt.Sprintf(":%d", ports.ControllerHealth),
		MetricsAddress: fmt.Sprintf(":%d", ports.ControllerMetrics),
		UpdateDelay:    100 * time.Millisecond,
		MaxUpdateDelay: time.Second,
		FirstPushes:    32,
		KindsInterval:  time.Minute,
		LogLevel:       "info",
		LogFormat:      logs.JSON,
	}
}

// Bind registers the options as flags.
func (o *Options) Bind(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, kubeconfig.Help)
	fs.Func("gateway", "the Gateway to serve, NAMESPACE/NAME (what the operator runs); without it, controllerName mode serves the oldest Gateway of the oldest GatewayClass with --controller-name", func(v string) error {
		ns, name, ok := strings.Cut(v, "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("want NAMESPACE/NAME")
		}
		o.Gateway = types.NamespacedName{Namespace: ns, Name: name}
		return nil
	})
	fs.StringVar(&o.ControllerName, "controller-name", o.ControllerName, "the GatewayClass controllerName: whose status entries this controller owns, and in controllerName mode which classes it serves")
	fs.StringVar(&o.EnvoyService, "envoy-service", o.EnvoyService, "the Envoy Service whose addresses the Gateway reports: NAME (in the Gateway's namespace) or NAMESPACE/NAME")
	fs.StringVar(&o.XDSAddress, "xds-address", o.XDSAddress, "address of the ADS gRPC server")
	fs.StringVar(&o.CertFile, "xds-cert-file", o.CertFile, "the xDS server's certificate; re-read when it changes")
	fs.StringVar(&o.KeyFile, "xds-key-file", o.KeyFile, "the xDS server's private key")
	fs.StringVar(&o.CAFile, "xds-ca-file", o.CAFile, "the fleet CA that Envoys' client certificates must be signed by")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "address of /healthz and /readyz")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "address of the Prometheus metrics endpoint; 0 turns it off")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go's CPU, heap and goroutine profiles under /debug/pprof/ on the metrics address")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among replicas to write status")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "namespace of the leader election Lease; defaults to the Gateway's")
	fs.DurationVar(&o.UpdateDelay, "update-delay", o.UpdateDelay, "how long changes must be quiet before translating; a change after that much quiet is translated at once")
	fs.DurationVar(&o.MaxUpdateDelay, "max-update-delay", o.MaxUpdateDelay, "the longest a change waits for quiet before it is translated; 0 means no limit")
	fs.IntVar(&o.FirstPushes, "max-first-pushes", o.FirstPushes, "how many Envoys are sent their first configuration at once; the others wait, and the replica is not ready while more than that many do (0: no bound)")
	fs.DurationVar(&o.KindsInterval, "kinds-interval", o.KindsInterval, "how often to check which Gateway API kinds the cluster serves; a change (a CRD installed or removed) restarts the controller")
	fs.StringVar(&o.RuntimeSettingsFile, "runtime-settings", o.RuntimeSettingsFile, "a JSON file of the ContourDeployment's runtimeSettings; default: the built-in defaults")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "json or console")
}

// runtimeSettings reads the runtime settings file, if any, and applies it.
func (o *Options) runtimeSettings() (xds.Settings, error) {
	if o.RuntimeSettingsFile == "" {
		return xds.DefaultSettings(), nil
	}
	data, err := os.ReadFile(o.RuntimeSettingsFile)
	if err != nil {
		return xds.Settings{}, fmt.Errorf("reading runtime settings: %w", err)
	}
	var rs v1alpha1.RuntimeSettings
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		return xds.Settings{}, fmt.Errorf("runtime settings %s: %w", o.RuntimeSettingsFile, err)
	}
	s, err := o.ApplyRuntimeSettings(rs)
	if err != nil {
		return xds.Settings{}, fmt.Errorf("runtime settings %s: %w", o.RuntimeSettingsFile, err)
	}
	return s, nil
}

// ApplyRuntimeSettings sets the batching and translation options from a
// profile's runtimeSettings and returns the Envoy settings they give:
// everything the controller takes from the profile.
func (o *Options) ApplyRuntimeSettings(rs v1alpha1.RuntimeSettings) (xds.Settings, error) {
	o.Runtime = rs
	if rs.Ingress != nil {
		o.IngressStatusAddress = rs.Ingress.StatusAddress
	}
	if d := rs.XDS.UpdateDelay; d != nil {
		o.UpdateDelay = d.Duration
	}
	if d := rs.XDS.MaxUpdateDelay; d != nil {
		o.MaxUpdateDelay = d.Duration
	}
	return xds.FromRuntime(rs)
}
