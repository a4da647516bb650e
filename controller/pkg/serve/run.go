package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"isobar.dev/api/fleet"
	"isobar.dev/api/kubeconfig"
	"isobar.dev/api/logs"
	"isobar.dev/controller/pkg/batch"
	"isobar.dev/controller/pkg/endpointwatch"
	"isobar.dev/controller/pkg/fleetreport"
	"isobar.dev/controller/pkg/namedwatch"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdsserver"
)

func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatewayv1.Install, gatewayv1beta1.Install, gatewayxv1alpha1.Install, contourv1.AddToScheme, contourv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// cacheSyncTimeout bounds the first listing of every watched kind. It is
// long because giving up restarts the controller, which lists everything
// again: when many controllers start at once (an operator upgrade rolls
// every fleet), a loaded API server took more than controller-runtime's
// two minutes here (e2e TestScaleGateways, 50 Gateways on 2 cores), and
// every retry added to its load. Readiness stays false until then.
const cacheSyncTimeout = 15 * time.Minute

// The leader Lease is held longer, and renewed less often, than
// controller-runtime's 15, 10 and 2 seconds. Leadership here decides only
// who writes status: every replica serves xDS. A leader that cannot renew
// exits, and its restart lists everything again; with the defaults, 50
// controllers started at once on a saturated API server (e2e
// TestScaleGateways, 2 cores) lost their Leases within seconds and exited.
// A leader that dies without releasing its Lease (a graceful stop releases
// it) would delay status writes by up to a minute, never traffic: its
// restarted container takes the Lease back at once, and a replica frees
// the Lease of a leader whose Pod is gone (leaderLock, goneLeader). Each
// controller's idle load on the API server, its renewals, drops by half.
var (
	leaseDuration = 60 * time.Second
	renewDeadline = 40 * time.Second
	retryPeriod   = 5 * time.Second
)

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
	// client-go logs through klog: in the same format, not its own.
	klog.SetLogger(log)
	s, err := scheme()
	if err != nil {
		return err
	}
	cfg, err := kubeconfig.Load(o.Kubeconfig)
	if err != nil {
		return err
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
	replica := os.Getenv("POD_NAME")
	if replica == "" {
		replica, _ = os.Hostname()
	}
	// Replicas report their Envoys to the leader through Leases beside
	// the leader election's; the cache holds only those.
	// The group is a label value: at most 63 characters.
	group := fleet.Shorten(leID)
	reports := client.MatchingLabels{fleetreport.LabelGateway: group}
	// Only the kinds the API server serves are watched: an informer of a
	// kind it does not serve never syncs, and the controller would never
	// start.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	served, why, watch, err := servedKinds(ctx, log, dc, s, o.KindsInterval)
	if ctx.Err() != nil {
		return nil // stopped while waiting for the API server
	}
	if err != nil {
		return err
	}
	for _, k := range served.unserved() {
		log.Info("Gateway API kind not served by the cluster: not watched, and no listener offers it", "kind", k, "reason", why[k])
	}
	for _, obj := range contourKinds {
		if k := gatewayv1.Kind(typeName(obj)); !served.served(obj) {
			log.Info("Contour kind not served by the cluster: not watched", "kind", k, "reason", why[k])
		}
	}
	byObject := map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{leNS: {}}, Label: labels.SelectorFromSet(labels.Set(reports))},
	}
	if o.Gateway.Name != "" {
		// Of the routes of other Gateways, only what status needs.
		// (A kind the cache is configured for must be served, or the
		// manager cannot be created.)
		for _, route := range []client.Object{&gatewayv1.HTTPRoute{}, &gatewayv1.GRPCRoute{}, &gatewayv1.TLSRoute{}, &gatewayv1.TCPRoute{}, &gatewayv1.UDPRoute{}} {
			if served.served(route) {
				byObject[route] = cache.ByObject{Transform: routeStubs(o.Gateway)}
			}
		}
	}
	drawn := &servedGraph{}
	leLease := types.NamespacedName{Namespace: leNS, Name: leID}
	var lock resourcelock.Interface
	leaderEvents := &leaderEvents{}
	if o.LeaderElect {
		if lock, err = leaderLock(cfg, leLease, os.Getenv("POD_NAME"), leaderEvents); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s,
		Cache: cache.Options{
			ByObject: byObject,
			// Translation never reads managed fields, often the largest
			// part of a route's metadata; a status write without them
			// leaves the server's as they are.
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddress, ExtraHandlers: debugHandlers(o.Profiling, drawn)},
		HealthProbeBindAddress:        o.HealthAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              leID,
		LeaderElectionNamespace:       leNS,
		LeaderElectionReleaseOnCancel: true,
		// The same Lease, held under the Pod's name (leaderLock).
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &leaseDuration,
		RenewDeadline:                       &renewDeadline,
		RetryPeriod:                         &retryPeriod,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if lock != nil {
		leaderEvents.set(mgr.GetEventRecorderFor(lock.Identity())) //nolint:staticcheck // leader election takes the core/v1 recorder, as controller-runtime's own lock does
	}

	if err := mgr.Add(watch); err != nil {
		return err
	}
	if pod, podNS := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"); lock != nil && pod != "" && podNS == leNS {
		if err := mgr.Add(&goneLeader{reader: mgr.GetAPIReader(), writer: mgr.GetClient(), lease: leLease, self: lock.Identity(),
			elected: mgr.Elected(), log: log.WithName("leader-election")}); err != nil {
			return err
		}
	}

	xdsServer := xdsserver.New(ctx, xdsserver.Options{FirstPushes: o.FirstPushes})
	if err := registerXDSMetrics(xdsServer); err != nil {
		return err
	}
	tlsCfg, err := xdsserver.ServerTLS(o.CertFile, o.KeyFile, o.CAFile)
	if err != nil {
		return err
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsCfg)))
	xdsServer.Register(g)
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	r := &reconciler{
		opts:   o,
		client: mgr.GetClient(),
		snap:   &snapshotter{informers: mgr.GetCache(), served: served},
		stage2: xds.NewTranslator(settings),
		xds:    xdsServer,
		batch:  &batch.Batcher{Delay: o.UpdateDelay, Max: o.MaxUpdateDelay},
		drawn:  drawn,
	}
	r.translated = make(chan struct{})
	// The xDS port opens once the first configuration is translated: an
	// empty cache would answer a reconnecting Envoy (whose version it
	// does not know) with no resources, and the Envoy would drop every
	// listener it serves. Until then Envoy keeps its configuration and
	// retries.
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		select {
		case <-r.translated:
		case <-ctx.Done():
			return nil
		}
		l, err := net.Listen("tcp", o.XDSAddress)
		if err != nil {
			return fmt.Errorf("xDS listener: %w", err)
		}
		r.serving.Store(true)
		go func() { <-ctx.Done(); g.GracefulStop() }()
		log.Info("serving xDS", "address", l.Addr().String())
		return g.Serve(l)
	})); err != nil {
		return err
	}
	r.certificateChanges = make(chan event.GenericEvent, 1)
	r.certificates = namedwatch.New(ctx, clientset, func() {
		// One pending event stands for any number of changes.
		select {
		case r.certificateChanges <- event.GenericEvent{Object: &corev1.Secret{}}:
		default:
		}
	})
	r.endpointChanges = make(chan event.GenericEvent, 1024)
	r.endpoints = endpointwatch.New(ctx, clientset, func(s *discoveryv1.EndpointSlice) {
		r.batch.Changed()
		select {
		case r.endpointChanges <- event.GenericEvent{Object: s}:
		case <-ctx.Done():
		}
	})
	own := func() fleetreport.Report {
		st := xdsServer.Status()
		rep := fleetreport.Report{Replica: replica, Connected: st.Connected, Acknowledged: st.Acknowledged, Rejections: st.Rejections, Holding: new(int)}
		if g := r.pushed.Load(); g != nil {
			rep.Generation, *rep.Holding = g.generation, xdsServer.Holding(g.mark)
		}
		return rep
	}
	fleetStatus := func() (fleetreport.Fleet, error) {
		mine := own()
		if !o.LeaderElect {
			return fleetreport.Combine(mine, nil, mine.Generation), nil
		}
		others, err := fleetreport.Others(ctx, mgr.GetClient(), leNS, group, replica, time.Now())
		return fleetreport.Combine(mine, others, mine.Generation), err
	}
	r.status = newStatusWriter(o, mgr.GetClient(), mgr.GetAPIReader(), fleetStatus)
	r.status.events = mgr.GetEventRecorder("isobar-controller")
	if err := r.setup(mgr, served); err != nil {
		return err
	}
	if err := mgr.Add(r.status); err != nil {
		return err
	}
	// Envoys connecting, acknowledging or rejecting change only the
	// Gateway's Programmed condition: rewrite status, translate nothing.
	published := make(chan struct{}, 1)
	go func() {
		for range xdsServer.Changes() {
			r.status.pokeGateway()
			select {
			case published <- struct{}{}:
			default:
			}
		}
	}()
	if o.LeaderElect {
		if err := r.watchReports(ctx, mgr, leNS, group, replica, own, published); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once Envoy can be given a complete configuration: before the
	// first translation, a connecting Envoy would get none; and once the
	// xDS port, which opens after it, accepts connections.
	if err := mgr.AddReadyzCheck("translated", func(*http.Request) error {
		if !r.ready.Load() {
			return errors.New("no configuration translated yet")
		}
		if !r.serving.Load() {
			return errors.New("the xDS port is not open yet")
		}
		// A backlog of first pushes: new Envoys are better served by
		// another replica until it drains.
		if n := xdsServer.Counters().Waiting; o.FirstPushes > 0 && n > o.FirstPushes {
			return fmt.Errorf("%d Envoys wait for their first configuration, more than the %d sent at once", n, o.FirstPushes)
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
	// Every change is told to the batcher, which decides when the pass
	// it asks for starts.
	changed := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		r.batch.Changed()
		q.Add(key)
	}
	always := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		r.batch.Changed()
		return []reconcile.Request{key}
	})
	// Status is not translated: an update of a Gateway API object that
	// leaves its generation alone (a status write: ours, another
	// controller's, the operator's) only has the status writer check that
	// our entries are still there.
	// A route that cannot attach to the served Gateway, before or after
	// its change (another Gateway's, cached as a stub, and not asking for
	// the default Gateways), changes nothing this controller serves.
	mine := func(o client.Object) bool {
		p, ok := routeSpec(o)
		return r.opts.Gateway.Name == "" || !ok || p.defaulted || mayAttach(p.parentRefs, o.GetNamespace(), r.opts.Gateway)
	}
	specOrStatus := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if mine(e.Object) {
				// A new object, perhaps of a name deleted a moment ago
				// whose entries the writer still holds as written: its
				// status must be checked, whatever the translation says.
				r.status.touched(e.Object)
				changed(q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if mine(e.Object) {
				changed(q)
			}
		},
		GenericFunc: func(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			changed(q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				if mine(e.ObjectOld) || mine(e.ObjectNew) {
					changed(q)
				}
				return
			}
			r.status.touched(e.ObjectNew)
		},
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("gateway").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: ptrTo(false), CacheSyncTimeout: cacheSyncTimeout})
	for _, obj := range gatewayKinds {
		if served.served(obj) {
			b = b.Watches(obj, specOrStatus)
		}
	}
	// Services' status holds the addresses the Gateway reports.
	b = b.Watches(&corev1.Service{}, always)
	// The Secrets and ConfigMaps the Gateway can use, each watched by
	// name.
	b = b.WatchesRawSource(source.Channel(r.certificateChanges, always))
	// Ingresses and IngressClasses: their spec, and annotations
	// (force-ssl-redirect, the default class). Our own status writes to
	// Ingresses change neither.
	for _, obj := range []client.Object{&networkingv1.Ingress{}, &networkingv1.IngressClass{}} {
		b = b.Watches(obj, always, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	}
	// HTTPProxies (spec, and the class annotations) and
	// TLSCertificateDelegations, when their CRDs are installed. Our own
	// status writes change neither spec nor annotations.
	for _, obj := range contourKinds {
		if served.served(obj) {
			b = b.Watches(obj, always, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
		}
	}
	// Of a Namespace only its labels matter (allowedRoutes selectors), not
	// the phase changes of one being deleted.
	b = b.Watches(&corev1.Namespace{}, always, builder.WithPredicates(predicate.LabelChangedPredicate{}))
	// EndpointSlices, watched in the namespaces of the Gateway's
	// backends (see reconcile), take the fast path of their own work
	// item.
	b = b.WatchesRawSource(source.Channel(r.endpointChanges, handler.EnqueueRequestsFromMapFunc(endpointsRequest)))
	return b.Complete(r)
}

// everyReplica is a runnable that runs whether or not this replica leads:
// every replica serves xDS to the Envoys connected to it.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

func (everyReplica) NeedLeaderElection() bool { return false }

func ptrTo[T any](v T) *T { return &v }

// debugHandlers serve, beside the metrics, the graph of what is served
// and, when asked for, the handlers of net/http/pprof.
func debugHandlers(profiling bool, drawn *servedGraph) map[string]http.Handler {
	out := map[string]http.Handler{"/debug/graph": drawn}
	if profiling {
		out["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		out["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
		out["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		out["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		out["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	return out
}

// reportPeriod is how often a replica renews its fleet report when
// nothing changes; a report three periods old no longer counts.
const reportPeriod = 10 * time.Second

// watchReports has every replica publish its fleet report, and the leader
// rewrite the Gateway's status when another replica's report changes or
// may have expired.
func (r *reconciler) watchReports(ctx context.Context, mgr ctrl.Manager, namespace, group, replica string, own func() fleetreport.Report, changes <-chan struct{}) error {
	lease := types.NamespacedName{Namespace: namespace, Name: fleet.Shorten(group + "-" + replica)}
	if err := mgr.Add(&fleetreport.Publisher{
		Client: mgr.GetClient(), Lease: lease, Group: group, Replica: replica,
		Period: reportPeriod, Report: own, Changes: changes,
	}); err != nil {
		return err
	}
	informer, err := mgr.GetCache().GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("watching the replicas' fleet reports: %w", err)
	}
	poke := func(any) { r.status.pokeGateway() }
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(any, any) { r.status.pokeGateway() },
		DeleteFunc: poke,
	}); err != nil {
		return err
	}
	// A replica that died without deleting its report expires unseen.
	return mgr.Add(everyReplica(func(ctx context.Context) error {
		t := time.NewTicker(reportPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				r.status.pokeGateway()
			}
		}
	}))
}
