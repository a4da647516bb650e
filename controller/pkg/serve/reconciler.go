package serve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"isobar.dev/api/target"
	"isobar.dev/api/v1alpha1"
	"isobar.dev/controller/pkg/batch"
	"isobar.dev/controller/pkg/endpointwatch"
	"isobar.dev/controller/pkg/ir"
	"isobar.dev/controller/pkg/namedwatch"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
	"isobar.dev/controller/pkg/xds"
	"isobar.dev/controller/pkg/xdsserver"
)

// reconciler translates the Gateway and everything attached to it, pushes
// the result to Envoy and hands the status to the status writer. It runs on
// every replica.
type reconciler struct {
	opts Options
	// proxyGauges are Contour's HTTPProxy gauges, as last set.
	proxyGauges proxyGauges
	client      client.Client
	snap        *snapshotter
	stage1      *translate.Translator
	stage2      *xds.Translator
	xds         *xdsserver.Server
	status      *statusWriter
	// drawn is what /debug/graph draws: the last translation.
	drawn *servedGraph
	// unserved tells what no Gateway serves.
	unserved unservedReport
	ready    atomic.Bool
	// translated is closed once the first configuration is in the xDS
	// cache: until then the xDS port is closed (see run).
	translated     chan struct{}
	translatedOnce sync.Once
	// serving is set once the xDS port is open: the replica is ready only
	// then, or a client told it is ready is refused a connection.
	serving atomic.Bool
	// pushed is the served Gateway's generation in the configuration
	// the xDS server holds, and the server's mark when that generation
	// was first pushed: what an Envoy must hold to serve it.
	pushed atomic.Pointer[servedGeneration]
	// clusters are the last full translation's, by Service: what the
	// endpoint fast path may update.
	clusters map[types.NamespacedName][]*ir.Cluster
	// served is the Gateway stage1 translates.
	served types.NamespacedName
	// batch holds passes back while changes keep coming, up to its Max.
	batch *batch.Batcher
	// certificates watches the Secrets and ConfigMaps the served Gateway
	// can use; certificateChanges tells the work queue of their changes.
	certificates       *namedwatch.Watcher
	certificateChanges chan event.GenericEvent
	// endpoints watches the EndpointSlices of the namespaces the served
	// Gateway's clusters come from; endpointChanges carries their events
	// to the work queue.
	endpoints       *endpointwatch.Watcher
	endpointChanges chan event.GenericEvent
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// Let a burst of changes settle into one pass; changes that arrive
	// during the pass mark the work item for one more pass, not many.
	first, err := r.batch.Wait(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	pass := time.Now()
	if !first.IsZero() {
		updateStageSeconds.WithLabelValues("batch").Observe(pass.Sub(first).Seconds())
	}
	if strings.HasPrefix(req.Name, endpointsPrefix) {
		return r.reconcileEndpoints(ctx, req)
	}
	res, err := r.snap.snapshot(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	tgt := target.Target{Gateway: r.opts.Gateway}
	if r.opts.Gateway.Name == "" {
		tgt = target.Pick(res.GatewayClasses, res.Gateways, r.opts.ControllerName)
	}
	r.readCertificates(ctx, res, tgt.Gateway)
	if tgt.Gateway != r.served || r.stage1 == nil {
		// A new Gateway to serve starts from empty caches.
		r.stage1 = translate.NewTranslator(translate.Options{
			ControllerName: gatewayv1.GatewayController(r.opts.ControllerName), Gateways: []types.NamespacedName{tgt.Gateway},
			Profile: func(types.NamespacedName) *v1alpha1.RuntimeSettings { return &r.opts.Runtime },
		})
		r.served = tgt.Gateway
	}
	start := time.Now()
	updateStageSeconds.WithLabelValues("snapshot").Observe(start.Sub(pass).Seconds())
	res.EndpointSlices = r.endpoints.Slices()
	result := r.stage1.Translate(res)
	if r.endpoints.Want(backendServices(result), r.endpointWaitFor()) {
		// Clusters from a Service watched for the first time: translate
		// again with its slices rather than serve them without endpoints.
		res.EndpointSlices = r.endpoints.Slices()
		result = r.stage1.Translate(res)
	}
	endpointNamespaces.Set(float64(len(r.endpoints.Namespaces())))
	// What is told beside the configuration (what no Gateway serves, the
	// HTTPProxy gauges, the drawing) walks every object: after the push,
	// so that it never delays one.
	defer r.tell(log, res, tgt, result)
	if len(result.Gateways) == 0 {
		r.clusters = nil
		if r.opts.Gateway.Name != "" {
			log.Info("Gateway not found; nothing to serve", "gateway", r.opts.Gateway.String())
			return ctrl.Result{}, nil
		}
		// controllerName mode: no Gateway yet is a valid state, served as
		// an empty configuration, with the passed-over objects told why.
		log.Info("no Gateway of a GatewayClass with our controllerName; serving nothing", "controllerName", r.opts.ControllerName)
		if _, err := r.xds.Update(xds.Nothing()); err != nil {
			return ctrl.Result{}, err
		}
		r.markReady()
		r.status.set(&statusWork{target: tgt, status: result.Status})
		return ctrl.Result{}, nil
	}
	resources, err := r.stage2.Translate(result.Gateways[0])
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("translating to Envoy configuration: %w", err)
	}
	translated := time.Now()
	translationSeconds.Observe(translated.Sub(start).Seconds())
	updateStageSeconds.WithLabelValues("translate").Observe(translated.Sub(start).Seconds())
	changed, err := r.xds.Update(resources)
	if err != nil {
		return ctrl.Result{}, err
	}
	updateStageSeconds.WithLabelValues("xds").Observe(time.Since(translated).Seconds())
	r.clusters = clustersByService(result.Gateways[0].Clusters)
	for _, gw := range res.Gateways {
		if gw.Namespace == tgt.Gateway.Namespace && gw.Name == tgt.Gateway.Name {
			// Another Gateway (controllerName mode serves the oldest) may
			// have the same generation: it is new all the same.
			if cur := r.pushed.Load(); cur == nil || cur.uid != gw.UID || cur.generation != gw.Generation {
				r.pushed.Store(&servedGeneration{uid: gw.UID, generation: gw.Generation, mark: r.xds.Mark()})
			}
		}
	}
	r.markReady()
	if changed > 0 {
		log.V(1).Info("pushed configuration", "changed", changed)
	}
	// Status goes to the writer, which runs only on the leader and at its
	// own pace: a thousand route status writes must not hold back the next
	// push to Envoy.
	r.status.set(&statusWork{target: tgt, status: result.Status})
	return ctrl.Result{}, nil
}

// tell reports what a pass found beside the configuration it pushed.
func (r *reconciler) tell(log logr.Logger, res *resources.Resources, tgt target.Target, result *translate.Result) {
	if r.drawn != nil {
		r.drawn.set(res, result.Status)
	}
	r.unserved.update(log, res, tgt, r.opts.ControllerName)
	r.proxyGauges.set(countProxies(result.Status.HTTPProxies, res.HTTPProxies))
}

// servedGeneration is a generation of a Gateway (by UID) the xDS server
// serves, and the server's versions when it was first pushed.
type servedGeneration struct {
	uid        types.UID
	generation int64
	mark       xdsserver.Mark
}

// markReady records that the xDS cache holds a complete configuration.
func (r *reconciler) markReady() {
	r.ready.Store(true)
	r.translatedOnce.Do(func() { close(r.translated) })
}
