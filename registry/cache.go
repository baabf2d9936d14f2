package registry

import (
	"context"
	"sync"
	"time"
)

// versionCache keeps the version lists that Resolve and Negotiate read, so
// that the hot path of every invocation does not decode definitions from
// the store. It is invalidated by the store's Watch events, which cover
// writes made through any Store on the same database (PostgreSQL replicas
// through LISTEN/NOTIFY), and synchronously by this Service's own writes.
// While no watch is established the cache is bypassed, so a reader never
// sees a change later than the notification of it.
type versionCache struct {
	mu       sync.Mutex
	entries  map[string][]Record
	watching bool
	// gen counts invalidations: a list read from the store is cached only
	// if no invalidation happened while it was being read, so a read that
	// raced a write never caches the older list.
	gen uint64
}

// maxCachedCapabilities bounds the cache; past it the cache starts over.
const maxCachedCapabilities = 20000

func cacheKey(scheme, domain, name string) string { return scheme + ":" + domain + "/" + name }

func (c *versionCache) get(key string) ([]Record, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return nil, c.gen, false
	}
	v, ok := c.entries[key]
	return v, c.gen, ok
}

func (c *versionCache) put(key string, v []Record, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching || gen != c.gen {
		return
	}
	if len(c.entries) >= maxCachedCapabilities {
		c.entries = map[string][]Record{}
	}
	c.entries[key] = v
}

func (c *versionCache) invalidate(key string) {
	c.mu.Lock()
	delete(c.entries, key)
	c.gen++
	c.mu.Unlock()
}

func (c *versionCache) setWatching(on bool) {
	c.mu.Lock()
	c.watching = on
	c.entries = map[string][]Record{}
	c.gen++
	c.mu.Unlock()
}

// watch keeps the cache in step with the store until ctx ends: every event
// drops its capability's entry; a closed watch empties the cache and turns
// it off until a new watch is established.
func (s *Service) watch(ctx context.Context) {
	<-Subscribe(ctx, s.store, Subscriber{
		Watching: func(bool) { s.cache.setWatching(true) },
		Event: func(ev Event) {
			s.cache.invalidate(cacheKey(ev.Key.Scheme, ev.Key.Domain, ev.Key.Name))
		},
		Closed: func() { s.cache.setWatching(false) },
		Failed: func(err error, _ time.Duration) {
			s.log.Warn("registry cache: cannot watch the store; reading through", "err", err)
		},
		MinRetry: time.Second, MaxRetry: time.Second,
	})
}

// cachedVersions returns a capability's versions from the cache or the
// store. The records are shared: callers must not modify them.
func (s *Service) cachedVersions(ctx context.Context, scheme, domain, name string) ([]Record, error) {
	key := cacheKey(scheme, domain, name)
	v, gen, ok := s.cache.get(key)
	if ok {
		return v, nil
	}
	v, err := s.store.Versions(ctx, scheme, domain, name)
	if err != nil {
		return nil, err
	}
	s.cache.put(key, v, gen)
	return v, nil
}
