// Package batch folds a stream of changes into translation passes. A
// change that comes after Delay of quiet starts a pass at once: a single
// edit reaches Envoy without waiting. The changes that follow it wait
// until changes have been quiet for Delay, so that the rest of a burst (a
// kubectl apply of fifty routes) costs one more pass, but never longer
// than Max after the first change they cover, so that a steady stream
// (EndpointSlices of a rolling Deployment every few milliseconds) cannot
// hold Envoy's configuration back forever.
package batch

import (
	"context"
	"sync"
	"time"
)

// Batcher is safe for concurrent use: event handlers call Changed, the one
// worker calls Wait.
type Batcher struct {
	Delay, Max time.Duration
	// Now and Sleep are the clock; nil means the real one.
	Now   func() time.Time
	Sleep func(context.Context, time.Duration) error

	mu          sync.Mutex
	pending     bool
	first, last time.Time
	// leading says the pending change came after quiet: its pass need
	// not wait.
	leading bool
}

// Changed records a change the next pass must cover.
func (b *Batcher) Changed() {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.pending {
		b.pending, b.first = true, now
		b.leading = b.last.IsZero() || now.Sub(b.last) >= b.Delay
	}
	b.last = now
}

// Wait returns when a pass should start: at once when no change is
// pending or the pending ones began after quiet, else once changes have
// been quiet for Delay or Max has passed since the first of them. The changes are then taken as covered, and
// Wait returns when the first of them came (zero when none was pending):
// how long a change waited for its pass.
func (b *Batcher) Wait(ctx context.Context) (time.Time, error) {
	for {
		b.mu.Lock()
		if !b.pending {
			b.mu.Unlock()
			return time.Time{}, nil
		}
		if b.leading {
			b.pending, b.leading = false, false
			first := b.first
			b.mu.Unlock()
			return first, nil
		}
		due := b.last.Add(b.Delay)
		if limit := b.first.Add(b.Max); b.Max > 0 && limit.Before(due) {
			due = limit
		}
		wait := due.Sub(b.now())
		if wait <= 0 {
			b.pending = false
			first := b.first
			b.mu.Unlock()
			return first, nil
		}
		b.mu.Unlock()
		if err := b.sleep(ctx, wait); err != nil {
			return time.Time{}, err
		}
	}
}

func (b *Batcher) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Batcher) sleep(ctx context.Context, d time.Duration) error {
	if b.Sleep != nil {
		return b.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
