package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"isobar.dev/api/fleet"
	"isobar.dev/api/logs"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdsserver"
)

func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatewayv1.Install, gatewayv1beta1.Install} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	log, err := logs.New(o.LogLevel, o.LogFormat)
	if err != nil {
		return err
	}
	settings, err := o.runtimeSettings()
	if err != nil {
		return err
	}
	ctrl.SetLogger(log)
	s, err := scheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the API server: %w", err)
	}
	leNS, leID := o.LeaderElectionNS, "isobar-controller-"+o.Gateway.Name
	if leNS == "" {
		leNS = o.Gateway.Namespace
	}
	if o.Gateway.Name == "" {
		// controllerName mode: one Lease per controllerName.
		leID = fleet.Shorten("isobar-controller-" + strings.NewReplacer("/", "-", ".", "-").Replace(o.ControllerName))
		if o.LeaderElect && leNS == "" {
			return errors.New("--leader-election-namespace is required with --leader-elect and no --gateway")
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        s,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddress, ExtraHandlers: profiles(o.Profiling)},
		HealthProbeBindAddress:        o.HealthAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              leID,
		LeaderElectionNamespace:       leNS,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	// Only the kinds the API server serves are watched: an informer of a
	// kind it does not serve never syncs, and the controller would never
	// start.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	served, why, watch, err := servedKinds(dc, s, o.KindsInterval)
	if err != nil {
		return err
	}
	for _, k := range served.unserved() {
		log.Info("Gateway API kind not served by the cluster: not watched, and no listener offers it", "kind", k, "reason", why[k])
	}
	if err := mgr.Add(watch); err != nil {
		return err
	}

	xdsServer := xdsserver.New(ctx)
	if err := registerXDSMetrics(xdsServer); err != nil {
		return err
	}
	tlsCfg, err := xdsserver.ServerTLS(o.CertFile, o.KeyFile, o.CAFile)
	if err != nil {
		return err
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsCfg)))
	xdsServer.Register(g)
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		l, err := net.Listen("tcp", o.XDSAddress)
		if err != nil {
			return fmt.Errorf("xDS listener: %w", err)
		}
		go func() { <-ctx.Done(); g.GracefulStop() }()
		log.Info("serving xDS", "address", l.Addr().String())
		return g.Serve(l)
	})); err != nil {
		return err
	}

	r := &reconciler{
		opts:   o,
		client: mgr.GetClient(),
		snap:   &snapshotter{informers: mgr.GetCache(), served: served},
		stage2: xds.NewTranslator(settings),
		xds:    xdsServer,
		status: newStatusWriter(o, mgr.GetClient(), mgr.GetAPIReader(), xdsServer.Status),
	}
	if err := r.setup(mgr, served); err != nil {
		return err
	}
	if err := mgr.Add(r.status); err != nil {
		return err
	}
	// Envoys connecting, acknowledging or rejecting change only the
	// Gateway's Programmed condition: rewrite status, translate nothing.
	go func() {
		for range xdsServer.Changes() {
			r.status.pokeGateway()
		}
	}()
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once Envoy can be given a complete configuration: before the
	// first translation, a connecting Envoy would get none.
	if err := mgr.AddReadyzCheck("translated", func(*http.Request) error {
		if !r.ready.Load() {
			return errors.New("no configuration translated yet")
		}
		return nil
	}); err != nil {
		return err
	}
	if o.Gateway.Name != "" {
		log.Info("starting", "gateway", o.Gateway.String())
	} else {
		log.Info("starting in controllerName mode", "controllerName", o.ControllerName)
	}
	return mgr.Start(ctx)
}

// setup watches everything translation reads; every event asks for one
// reconcile of the Gateway, and the work queue folds bursts into one.
func (r *reconciler) setup(mgr ctrl.Manager, served kindSet) error {
	// One work item stands for "translate again"; in controllerName mode
	// it names no Gateway.
	key := reconcile.Request{NamespacedName: r.opts.Gateway}
	always := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{key} })
	// Status is not translated: an update of a Gateway API object that
	// leaves its generation alone (a status write: ours, another
	// controller's, the operator's) only has the status writer check that
	// our entries are still there.
	specOrStatus := handler.Funcs{
		CreateFunc: func(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key)
		},
		DeleteFunc: func(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key)
		},
		GenericFunc: func(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				q.Add(key)
				return
			}
			r.status.touched(e.ObjectNew)
		},
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("gateway").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: ptrTo(false)})
	for _, obj := range gatewayKinds {
		if served.served(obj) {
			b = b.Watches(obj, specOrStatus)
		}
	}
	// Services' status holds the addresses the Gateway reports; Secrets and
	// ConfigMaps have no generation to go by.
	for _, obj := range []client.Object{&corev1.Service{}, &corev1.Secret{}, &corev1.ConfigMap{}} {
		b = b.Watches(obj, always)
	}
	// Of a Namespace only its labels matter (allowedRoutes selectors), not
	// the phase changes of one being deleted.
	b = b.Watches(&corev1.Namespace{}, always, builder.WithPredicates(predicate.LabelChangedPredicate{}))
	// EndpointSlices take the fast path of their own work item.
	b = b.Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(endpointsRequest))
	return b.Complete(r)
}

// everyReplica is a runnable that runs whether or not this replica leads:
// every replica serves xDS to the Envoys connected to it.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

func (everyReplica) NeedLeaderElection() bool { return false }

func ptrTo[T any](v T) *T { return &v }

// profiles are the handlers of net/http/pprof, when asked for.
func profiles(on bool) map[string]http.Handler {
	if !on {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}
