package engine

import (
	"cmp"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/ir"
)

// vhost is one virtual host's routes, kept in precedence order across
// translations: a route that comes or goes is a change to a sorted list,
// not a sort of the whole host.
type vhost struct {
	domain string
	certs  []string
	// adds counts the route additions that hold the host.
	adds int
	// entries are in precedence order; added and removed wait for the
	// next build.
	entries        []entry
	added, removed []entry
	addedEpoch     uint64
	// built is the IR of the entries, nil after a change.
	built *ir.VirtualHost
	// policy is the host's own, from the object that owns the host
	// (policyOwner), an HTTPProxy root.
	policy      *ir.VirtualHostPolicy
	policyOwner *metav1.ObjectMeta
}

// entry is a route with what orders it among its virtual host's routes.
type entry struct {
	route       *ir.Route
	meta        *metav1.ObjectMeta
	source      Source
	rule, match int32
	// rank orders the entry's route among the routes added in one
	// translation.
	rank int32
}

func newEntry(r *ir.Route, meta *metav1.ObjectMeta, src Source, rule, match int) entry {
	return entry{route: r, meta: meta, source: src, rule: int32(rule), match: int32(match)}
}

// shape packs what orders routes by their match into one number, smaller
// first: exact paths, then (an Isobar choice) regular expressions, then
// prefixes, longer first; then routes with a method; more headers; more
// query parameters. The Gateway API caps paths at 1024 characters and
// header and query matches at 16.
func shape(m *ir.Match) uint64 {
	method := uint64(1)
	if m.Method != "" {
		method = 0
	}
	return uint64(pathRank(m.PathType))<<40 |
		uint64(0xFFFF-min(len(m.Path), 0xFFFF))<<24 |
		method<<16 |
		uint64(0xFF-min(len(m.Headers), 0xFF))<<8 |
		uint64(0xFF-min(len(m.QueryParams), 0xFF))
}

// add adds a route's entries. rank orders the route among those added in
// one translation (which attaches new routes oldest first), so the entries
// of one translation settle without comparing routes; entries of an
// earlier translation still waiting are settled first.
func (v *vhost) add(meta *metav1.ObjectMeta, src Source, rank int32, epoch uint64, rules [][]*ir.Route) {
	if len(v.added) > 0 && v.addedEpoch != epoch {
		v.settle()
	}
	v.addedEpoch = epoch
	v.adds++
	v.added = appendEntries(v.added, meta, src, rank, rules)
	v.built = nil
}

// remove takes back an add and reports whether the host is now empty.
func (v *vhost) remove(meta *metav1.ObjectMeta, src Source, rules [][]*ir.Route) bool {
	if v.policyOwner == meta {
		v.policy, v.policyOwner = nil, nil
	}
	v.adds--
	v.removed = appendEntries(v.removed, meta, src, 0, rules)
	v.built = nil
	return v.adds == 0
}

// rekey points a route's entries at a new object of it, of the same
// route at the same generation, which orders them the same.
func (v *vhost) rekey(old, meta *metav1.ObjectMeta, rules [][]*ir.Route) {
	if v.policyOwner == old {
		v.policyOwner = meta
	}
	for _, list := range [][]entry{v.added, v.removed} {
		for i := range list {
			if list[i].meta == old {
				list[i].meta = meta
			}
		}
	}
	for i, rs := range rules {
		for j, r := range rs {
			probe := newEntry(r, old, FromGatewayAPI, i, j)
			k, _ := slices.BinarySearchFunc(v.entries, probe, precedence)
			for ; k < len(v.entries) && precedence(v.entries[k], probe) == 0; k++ {
				if v.entries[k].route == r && v.entries[k].meta == old {
					v.entries[k].meta = meta
					break
				}
			}
		}
	}
}

func appendEntries(list []entry, meta *metav1.ObjectMeta, src Source, rank int32, rules [][]*ir.Route) []entry {
	for i, rs := range rules {
		for j, r := range rs {
			e := newEntry(r, meta, src, i, j)
			e.rank = rank
			list = append(list, e)
		}
	}
	return list
}

// few is how many changes a virtual host takes one by one (a binary
// search and a move each); more are filtered or merged in one pass.
const few = 16

// virtualHost returns the host's IR, settling changes first.
func (v *vhost) virtualHost() *ir.VirtualHost {
	if v.built != nil {
		return v.built
	}
	v.settle()
	vh := &ir.VirtualHost{Name: v.domain, Domains: []string{v.domain}, Routes: make([]*ir.Route, len(v.entries)), Policy: v.policy}
	for i, e := range v.entries {
		vh.Routes[i] = e.route
	}
	v.built = vh
	return vh
}

func (v *vhost) settle() {
	v.settleRemoved()
	v.settleAdded()
}

func (v *vhost) settleRemoved() {
	if len(v.removed) == 0 {
		return
	}
	if len(v.removed) <= few {
		for _, r := range v.removed {
			// Equal entries are one route's (a parentRef given twice)
			// or its older object's.
			i, _ := slices.BinarySearchFunc(v.entries, r, precedence)
			for ; i < len(v.entries) && precedence(v.entries[i], r) == 0; i++ {
				if v.entries[i].route == r.route {
					v.entries = slices.Delete(v.entries, i, i+1)
					break
				}
			}
		}
	} else {
		gone := make(map[*ir.Route]int, len(v.removed))
		for _, r := range v.removed {
			gone[r.route]++
		}
		v.entries = slices.DeleteFunc(v.entries, func(e entry) bool {
			if gone[e.route] > 0 {
				gone[e.route]--
				return true
			}
			return false
		})
	}
	v.removed = truncate(v.removed)
}

func (v *vhost) settleAdded() {
	if len(v.added) == 0 {
		return
	}
	switch {
	case len(v.entries) == 0:
		v.entries, v.added = sortBulk(v.added), nil
		return
	case len(v.added) <= few:
		for _, a := range v.added {
			i, _ := slices.BinarySearchFunc(v.entries, a, precedence)
			v.entries = slices.Insert(v.entries, i, a)
		}
	default:
		v.added = sortBulk(v.added)
		merged := make([]entry, 0, len(v.entries)+len(v.added))
		i, j := 0, 0
		for i < len(v.entries) && j < len(v.added) {
			if precedence(v.added[j], v.entries[i]) < 0 {
				merged = append(merged, v.added[j])
				j++
			} else {
				merged = append(merged, v.entries[i])
				i++
			}
		}
		merged = append(merged, v.entries[i:]...)
		v.entries = append(merged, v.added[j:]...)
	}
	v.added = truncate(v.added)
}

// truncate empties a list of entries for reuse, clearing them first: an
// entry left in the backing array past the length still holds its route's
// object, which the informer has replaced since (every route's object
// changes when its status is written), and kept one or two old objects
// of every route alive.
func truncate(list []entry) []entry {
	clear(list)
	return list[:0]
}

// sortBulk sorts the entries added in one translation into precedence
// order. They come in route order (rank), and in rule and match order
// within a route, so ordering them by shape alone, keeping that order among
// equal shapes, completes the order: a counting sort over the few distinct
// shapes, instead of comparing routes through their metadata.
func sortBulk(list []entry) []entry {
	starts := map[uint64]int{}
	for i, e := range list {
		if i > 0 && byRank(list[i-1], e) > 0 {
			// Not in the order attachment gives; never expected.
			slices.SortFunc(list, precedence)
			return list
		}
		starts[shape(&e.route.Match)]++
	}
	if len(starts) == 1 {
		return list
	}
	shapes := slices.Sorted(maps.Keys(starts))
	at := 0
	for _, sh := range shapes {
		n := starts[sh]
		starts[sh] = at
		at += n
	}
	out := make([]entry, len(list))
	for _, e := range list {
		sh := shape(&e.route.Match)
		out[starts[sh]] = e
		starts[sh]++
	}
	return out
}

func byRank(a, b entry) int {
	return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.rule, b.rule), cmp.Compare(a.match, b.match))
}

// precedence orders routes as the Gateway API says (HTTPRouteRule): by the
// shape of their match, then the route's source (see Source), then the
// older route, then by namespace and name,
// then rule order, then match order. Entries of one route object, rule and
// match compare equal.
func precedence(a, b entry) int {
	return cmp.Or(cmp.Compare(shape(&a.route.Match), shape(&b.route.Match)), cmp.Compare(a.source, b.source), CompareRoutes(a.meta, b.meta), cmp.Compare(a.rule, b.rule), cmp.Compare(a.match, b.match))
}

func pathRank(p ir.PathMatchType) int {
	switch p {
	case ir.PathExact:
		return 0
	case ir.PathRegex:
		return 1
	default:
		return 2
	}
}

// winner returns the entry that takes the requests of route r, one of the
// host's: another entry with the same match that ranks first.
func (v *vhost) winner(r *ir.Route) (entry, bool) {
	v.settle()
	sh := shape(&r.Match)
	i, _ := slices.BinarySearchFunc(v.entries, sh, func(e entry, sh uint64) int { return cmp.Compare(shape(&e.route.Match), sh) })
	for ; i < len(v.entries) && shape(&v.entries[i].route.Match) == sh; i++ {
		e := v.entries[i]
		if e.route == r {
			break
		}
		if sameMatch(&e.route.Match, &r.Match) {
			return e, true
		}
	}
	return entry{}, false
}

func sameMatch(a, b *ir.Match) bool {
	return a.PathType == b.PathType && a.Path == b.Path && a.Method == b.Method &&
		slices.Equal(a.Headers, b.Headers) && slices.Equal(a.QueryParams, b.QueryParams)
}
