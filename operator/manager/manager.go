// Package manager wires the operator's reconcilers into a controller-runtime
// manager: the scheme, leader election, health probes and metrics.
package manager

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/fleet"
	"isobar.dev/api/kubeconfig"
	"isobar.dev/api/logs"
	"isobar.dev/api/served"
	isobarv1alpha1 "isobar.dev/api/v1alpha1"
	"isobar.dev/operator/pkg/gateway"
	"isobar.dev/operator/pkg/gatewayclass"
	"isobar.dev/operator/pkg/index"
	"isobar.dev/operator/pkg/profile"
	"isobar.dev/operator/pkg/provision"
	"isobar.dev/operator/pkg/render"
	"isobar.dev/operator/pkg/static"
)

// DefaultControllerName is the GatewayClass controllerName the operator
// serves by default.
const DefaultControllerName = isobarv1alpha1.DefaultControllerName

// Options are the operator's command-line settings.
type Options struct {
	ControllerName     string
	ControllerImage    string
	EnvoyImage         string
	MetricsAddress     string
	HealthProbeAddress string
	LeaderElect        bool
	LeaderElectionNS   string
	LogLevel           string
	LogFormat          string
	// KindsInterval is how often the served Gateway API kinds are checked
	// again; a change restarts the operator.
	KindsInterval time.Duration
	// NodePortRange is the API server's --service-node-port-range: the API
	// server does not publish it, and its dry run does not check it.
	NodePortRange render.PortRange
	// Kubeconfig is the kubeconfig file of the cluster; "" finds the
	// cluster as kubectl does (package kubeconfig).
	Kubeconfig string
}

// DefaultOptions work for a single operator replica in a cluster.
func DefaultOptions() Options {
	return Options{
		ControllerName:     DefaultControllerName,
		ControllerImage:    render.DefaultControllerImage,
		EnvoyImage:         render.DefaultEnvoyImage,
		MetricsAddress:     ":8080",
		HealthProbeAddress: ":8081",
		LogLevel:           "info",
		LogFormat:          logs.JSON,
		KindsInterval:      time.Minute,
		NodePortRange:      render.DefaultNodePortRange,
	}
}

// Bind registers the options as flags on fs.
func (o *Options) Bind(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, kubeconfig.Help)
	fs.StringVar(&o.ControllerName, "controller-name", o.ControllerName, "GatewayClass spec.controllerName this operator provisions Gateways for")
	fs.StringVar(&o.ControllerImage, "controller-image", o.ControllerImage, "image of the per-Gateway controller (isobar-controller)")
	fs.StringVar(&o.EnvoyImage, "envoy-image", o.EnvoyImage, "image of Envoy")
	fs.StringVar(&o.MetricsAddress, "metrics-bind-address", o.MetricsAddress, "address of the Prometheus metrics endpoint; 0 turns it off")
	fs.StringVar(&o.HealthProbeAddress, "health-probe-bind-address", o.HealthProbeAddress, "address of /healthz and /readyz")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among replicas through a Lease, so only one reconciles")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "namespace of the leader election Lease; defaults to $POD_NAMESPACE (the Deployment sets it from the Pod), else the Pod's service account's")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "json or console")
	fs.Func("service-node-port-range", "the API server's --service-node-port-range (default "+render.DefaultNodePortRange.String()+"): profiles' node ports are checked against it", func(v string) error {
		r, err := render.ParsePortRange(v)
		o.NodePortRange = r
		return err
	})
	fs.DurationVar(&o.KindsInterval, "kinds-interval", o.KindsInterval, "how often to check that the cluster serves GatewayClass and Gateway; a change (their CRDs installed or removed) restarts the operator")
}

// Scheme holds every type the operator reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		gatewayv1.Install,
		gatewayv1beta1.Install,
		gatewayxv1alpha1.Install,
		isobarv1alpha1.AddToScheme,
		contourv1.AddToScheme,
		contourv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// Run starts the manager and blocks until SIGTERM or SIGINT.
func Run(o Options) error {
	log, err := logs.New(o.LogLevel, o.LogFormat)
	if err != nil {
		return err
	}
	ctrl.SetLogger(log)
	// client-go logs through klog: in the same format, not its own.
	klog.SetLogger(log)
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	cfg, err := kubeconfig.Load(o.Kubeconfig)
	if err != nil {
		return err
	}
	// Every reconciler reads GatewayClasses and Gateways: without their
	// CRDs the operator has nothing to do, and waits for them, healthy,
	// rather than crash-looping on informers that never sync.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	required := []schema.GroupVersionKind{schema.FromAPIVersionAndKind(gatewayv1.GroupVersion.String(), "GatewayClass"), schema.FromAPIVersionAndKind(gatewayv1.GroupVersion.String(), "Gateway")}
	// ListenerSets, ReferenceGrants, BackendTLSPolicies, HTTPProxies,
	// TLSCertificateDelegations, ExtensionServices and XBackends are optional: without their CRDs a Gateway has its own listeners
	// only, and no certificates from them. The watcher restarts the operator when that
	// changes.
	want := append(required, provision.OptionalKinds...)
	ctx := ctrl.SetupSignalHandler()
	have, err := served.Await(ctx, dc, want, log)
	if ctx.Err() != nil {
		return nil // stopped while waiting
	}
	if err != nil {
		return err
	}
	// After discovery: creating the manager maps the cached kinds through
	// the API server too.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddress},
		HealthProbeBindAddress:  o.HealthProbeAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "isobar-operator.isobar.dev",
		LeaderElectionNamespace: cmp.Or(o.LeaderElectionNS, os.Getenv("POD_NAMESPACE")),
		// Releasing the Lease on a clean stop lets the next replica take
		// over at once instead of after the lease duration.
		LeaderElectionReleaseOnCancel: true,
		// The operator reads back only what it provisioned: caching every
		// Secret, Deployment and Service of the cluster would cost memory
		// for nothing.
		Cache: cache.Options{ByObject: ownedByUs()},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if missing := have.Missing(required); len(missing) > 0 {
		for _, gvk := range missing {
			log.Error(nil, "Gateway API kind not served by the cluster: provisioning waits for the Gateway API CRDs", "kind", gvk.Kind, "reason", served.Why(dc, gvk))
		}
	} else if err := setupReconcilers(mgr, o, have); err != nil {
		return err
	}
	if err := mgr.Add(&served.Watcher{Discovery: dc, Want: want, Have: have, Interval: o.KindsInterval}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	// Ready once the informer caches have synced: before that the operator
	// would act on an empty view of the cluster.
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 100*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	log.Info("starting", "controllerName", o.ControllerName)
	return mgr.Start(ctx)
}

func setupReconcilers(mgr ctrl.Manager, o Options, have served.Set) error {
	if err := index.Setup(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := (&gatewayclass.Reconciler{Client: mgr.GetClient(), ControllerName: o.ControllerName, NodePortRange: o.NodePortRange}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the GatewayClass reconciler: %w", err)
	}
	if err := (&gateway.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ControllerName: o.ControllerName,
		Images:        render.Images{Controller: o.ControllerImage, Envoy: o.EnvoyImage},
		Recorder:      mgr.GetEventRecorder("isobar-operator"),
		Now:           time.Now,
		NodePortRange: o.NodePortRange,
		Served:        have,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Gateway reconciler: %w", err)
	}
	if err := (&static.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), OperatorControllerName: o.ControllerName,
		Images: render.Images{Controller: o.ControllerImage, Envoy: o.EnvoyImage}, Now: time.Now, NodePortRange: o.NodePortRange,
		Served: have,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the static fleet reconciler: %w", err)
	}
	if err := (&profile.Reconciler{Client: mgr.GetClient(), ControllerName: o.ControllerName, NodePortRange: o.NodePortRange}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ContourDeployment reconciler: %w", err)
	}
	return nil
}

// ownedByUs restricts the cache of the kinds the operator provisions to
// the objects it labelled.
func ownedByUs() map[client.Object]cache.ByObject {
	sel := labels.SelectorFromSet(labels.Set{fleet.LabelManagedBy: fleet.ManagedBy})
	out := map[client.Object]cache.ByObject{}
	for _, o := range []client.Object{
		&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.Service{}, &corev1.ServiceAccount{},
		&appsv1.Deployment{}, &appsv1.DaemonSet{}, &policyv1.PodDisruptionBudget{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
	} {
		out[o] = cache.ByObject{Label: sel}
	}
	return out
}
