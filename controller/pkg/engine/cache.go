package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"isobar.dev/controller/pkg/backend"
	"isobar.dev/controller/pkg/env"
)

// A Cache is what one translation shares among its Gateways: the deps
// its snapshot changed since the previous translation's, the translated
// rules of each route object, and the cluster names the rules made.
type Cache struct {
	changed map[env.Dep]bool
	fresh   map[*metav1.ObjectMeta]*Rules
	Names   backend.Names
}

// NewCache starts the cache of a translation of the snapshot indexed by
// idx; prev is the previous translation's index, nil when there was none
// (or nothing of it is kept), which changes nothing.
func NewCache(prev, idx *env.Index) *Cache {
	c := &Cache{fresh: map[*metav1.ObjectMeta]*Rules{}}
	if prev != nil {
		c.changed = env.Changed(prev, idx)
	}
	return c
}

// Changed are the deps the snapshot changed.
func (c *Cache) Changed() map[env.Dep]bool { return c.changed }

// CachedRules returns the translated rules of a route object, R being
// what its processor translates a route's rules into: those another
// Gateway translated in this translation, or those prev (the Gateway's
// previous state, nil for none) holds while none of what translating them
// read changed, or else translate's, given the Reads to record in. The
// *Rules is what the route's outcome keeps.
func CachedRules[D, R any](c *Cache, prev *State[D], meta *metav1.ObjectMeta, translate func(*env.Reads) R) (*Rules, R) {
	if hit, ok := c.fresh[meta]; ok {
		return hit, hit.Value.(R)
	}
	if prev != nil {
		if o := prev.Applied(meta); o != nil && o.Rules != nil && !o.Rules.Reads.AnyIn(c.changed) {
			if v, ok := o.Rules.Value.(R); ok {
				c.fresh[meta] = o.Rules
				return o.Rules, v
			}
		}
	}
	hit := &Rules{}
	v := translate(&hit.Reads)
	hit.Value = v
	c.fresh[meta] = hit
	return hit, v
}
