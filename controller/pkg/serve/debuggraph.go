package serve

import (
	"net/http"
	"sync/atomic"

	"isobar.dev/controller/pkg/graph"
	"isobar.dev/controller/pkg/resources"
	"isobar.dev/controller/pkg/translate"
)

// servedGraph is what /debug/graph draws, as Contour's /debug/dag: the
// Gateway served, its listeners, the routes, Ingresses and HTTPProxy trees
// attached and the Services they send to, from the last translation. It is
// drawn on request, in Graphviz's DOT language (`dot -Tsvg`), so a pass
// costs only keeping the pointers: a snapshot and its status are not
// changed once translated.
type servedGraph struct {
	last atomic.Pointer[drawing]
}

type drawing struct {
	res    *resources.Resources
	status *translate.Status
}

func (g *servedGraph) set(res *resources.Resources, st *translate.Status) {
	g.last.Store(&drawing{res: res, status: st})
}

func (g *servedGraph) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	d := g.last.Load()
	if d == nil {
		http.Error(w, "nothing translated yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
	_, _ = w.Write(graph.DOT(d.res, d.status))
}
