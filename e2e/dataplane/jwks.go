package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"isobar.dev/controller/pkg/envoysim"
)

// maxJWKS bounds the key set Envoy reads.
const maxJWKS = 1 << 20

// cachedJWKS is a key set Envoy fetched, and until when it keeps it.
type cachedJWKS struct {
	doc   []byte
	until time.Time
}

// jwks is Envoy's remote JWKS fetcher: the key set of a check's URI,
// fetched through its cluster within the check's timeout over a real
// connection, and kept for the provider's cache duration. A failed fetch
// is not kept.
func (p *proxy) jwks(ctx context.Context, sim *envoysim.Simulator, c *envoysim.JWTCheck) ([]byte, error) {
	key := c.Server.Cluster + " " + c.URI
	p.mu.Lock()
	cached, ok := p.keySets[key]
	p.mu.Unlock()
	if ok && time.Now().Before(cached.until) {
		return cached.doc, nil
	}
	ctx, cancel, endpoint := p.reach(ctx, &c.Server, c.Timeout)
	defer cancel()
	if endpoint == "" {
		return nil, fmt.Errorf("cluster %s has no healthy endpoint", c.Server.Cluster)
	}
	resp, err := p.attempt(ctx, sim, target{cluster: c.Server.Cluster, http2: c.Server.HTTP2, tls: c.Server.TLS, request: c.KeysRequest()}, endpoint, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", c.URI, resp.StatusCode)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	switch {
	case err != nil:
		return nil, err
	case len(doc) > maxJWKS:
		return nil, errors.New("the key set is too large")
	}
	p.mu.Lock()
	if p.keySets == nil {
		p.keySets = map[string]cachedJWKS{}
	}
	p.keySets[key] = cachedJWKS{doc: doc, until: time.Now().Add(c.CacheDuration)}
	p.mu.Unlock()
	return doc, nil
}
