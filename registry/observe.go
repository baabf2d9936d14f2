package registry

import (
	"sync/atomic"
	"time"
)

// Observer learns the outcome and duration of each registry operation
// (register, resolve, get, list, search, deprecate, import), for metrics:
// err is nil on success.
type Observer func(op string, d time.Duration, err error)

// WithObserver reports every operation of the Service to o.
func WithObserver(o Observer) Option { return func(s *Service) { s.observer = o } }

// observe reports an operation begun at start, with *err its outcome (a
// deferred call: observe(op, time.Now(), &err)).
func (s *Service) observe(op string, start time.Time, err *error) {
	if s.observer != nil {
		s.observer(op, time.Since(start), *err)
	}
}

// cacheStats counts the cache's answers.
type cacheStats struct{ hits, misses atomic.Uint64 }

func (c *cacheStats) count(hit bool) {
	if hit {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
}

// CacheStats reports how often the version cache (WithCache) answered a
// read (hits) and how often the store had to (misses), since the Service
// began.
func (s *Service) CacheStats() (hits, misses uint64) {
	return s.cache.stats.hits.Load(), s.cache.stats.misses.Load()
}
