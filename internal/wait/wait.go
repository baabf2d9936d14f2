// Package wait holds the one cancellable pause caphub's retry loops use
// (the pipeline's backoff, re-watching the store, the gateway's rebuilds).
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; it reports whether the whole d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
