package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/caphub/caphub/capability"
)

// versionCache keeps in memory what the hot read paths serve, per
// capability: its version list, which Resolve and Negotiate read (so that
// the hot path of every invocation does not decode definitions from the
// store), and the stored JSON of single versions, which a GET of one
// version answers with as it is (see Service.CachedRaw). It is bounded by
// versions held and by their estimated bytes; past either bound the least
// recently used capabilities are dropped.
//
// It is invalidated by the store's Watch events, which cover writes made
// through any Store on the same database (PostgreSQL replicas through
// LISTEN/NOTIFY), and synchronously by this Service's own writes. While no
// watch is established the cache is bypassed, so a reader never sees a
// change later than the notification of it.
type versionCache struct {
	stats   cacheStats
	mu      sync.Mutex
	entries map[string]*cacheEntry
	lru     cacheEntry // sentinel of the recency ring: lru.next is the most recent
	// records and bytes are what the entries hold: versions (decoded
	// or raw) and their estimated size.
	records  int
	bytes    int64
	limits   CacheLimits
	watching bool
	// gen counts invalidations: what was read from the store is cached
	// only if no invalidation happened while it was being read, so a read
	// that raced a write never caches the older content.
	gen uint64
}

// cacheEntry is what the cache holds of one capability.
type cacheEntry struct {
	key         string
	versions    []Record // ascending; valid when hasVersions
	hasVersions bool
	raw         map[string]*CachedVersion  // by full version; nil: known not to be stored
	decoded     map[string]*decodedVersion // by full version
	records     int
	bytes       int64
	prev, next  *cacheEntry
}

// CachedVersion is one version's stored JSON as the cache keeps it for
// serving: the bytes, digest and trust tier, and the ETag that names them.
// It is shared: callers must not modify it.
type CachedVersion struct {
	RawRecord
	// ETag is a strong entity tag of the JSON, quoted as the header
	// carries it. It is not the Digest: the digest is that of the
	// registered content, while a deprecation changes the stored JSON.
	ETag string
	// headers holds the values of the headers an answer with the JSON
	// carries (see Headers), made once.
	headers [4]string
}

// NewCachedVersion returns raw with its ETag.
func NewCachedVersion(raw RawRecord) *CachedVersion {
	sum := sha256.Sum256(raw.Definition)
	v := &CachedVersion{RawRecord: raw, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	v.headers = [4]string{v.ETag, v.Digest, v.TrustTier, strconv.Itoa(len(v.Definition))}
	return v
}

// Headers returns the values of the headers an answer with v's JSON
// carries, each a slice of one string, made when v was: its ETag, Digest
// (DigestHeader), TrustTier (TrustTierHeader) and Content-Length. A
// server sets them in its answer's header map without allocating; they
// are shared, and must not be modified (appending is safe: their capacity
// is their length).
func (v *CachedVersion) Headers() (etag, digest, tier, length []string) {
	h := &v.headers
	return h[0:1:1], h[1:2:2], h[2:3:3], h[3:4:4]
}

// decodedVersion is one version's definition decoded from the JSON it
// was decoded from: a list row whose stored JSON is the same bytes takes
// the decoded definition instead of decoding it again.
type decodedVersion struct {
	json []byte
	def  capability.Definition
}

// CacheLimits bound the cache (see WithCacheLimits).
type CacheLimits struct {
	// Versions is how many versions (decoded in version lists, or raw) the
	// cache holds at most.
	Versions int
	// Bytes is their estimated size at most: a raw version counts its JSON
	// and key, a decoded one decodedRecordBytes.
	Bytes int64
}

// DefaultCacheLimits hold the whole of a registry of 100,000 synthetic
// versions' JSON (about 850 bytes each, 1,260 with what the cache keeps
// beside it: about 126 MB), so that a GET of any of them, once read, is
// answered from memory.
var DefaultCacheLimits = CacheLimits{Versions: 150_000, Bytes: 128 << 20}

// decodedRecordBytes is what one decoded Record of a version list is
// counted as: its size in memory is not known without walking it; a
// synthetic definition of 840 bytes of JSON (storetest.Synthetic) holds
// about 3,000 bytes once decoded.
const decodedRecordBytes = 3 << 10

// rawOverhead is what a raw version costs beside its JSON and key: the
// CachedVersion, the digest, tier, ETag and key strings, the map slots and
// a share of its capability's entry. Measured: 30,000 versions of
// storetest.Synthetic read from SQLite grew the heap by 1,256 bytes each,
// for 836 bytes of JSON and 35 of key and version.
const rawOverhead = 384

// WithCacheLimits sets the bounds of WithCache's cache (DefaultCacheLimits
// when not given; a zero field keeps its default).
func WithCacheLimits(l CacheLimits) Option {
	return func(s *Service) {
		if l.Versions > 0 {
			s.cache.limits.Versions = l.Versions
		}
		if l.Bytes > 0 {
			s.cache.limits.Bytes = l.Bytes
		}
	}
}

func cacheKey(scheme, domain, name string) string {
	var buf [cacheKeyBuf]byte
	return string(appendCacheKey(buf[:0], scheme, domain, name))
}

// cacheKeyBuf is the size of the stack buffers keys are built in (a
// longer key is built on the heap).
const cacheKeyBuf = 128

// appendCacheKey appends the cache key of a capability to b: built in a
// buffer on the stack, a key looked up (c.entries[string(b)]) is not
// allocated.
func appendCacheKey(b []byte, scheme, domain, name string) []byte {
	b = append(b, scheme...)
	b = append(b, ':')
	b = append(b, domain...)
	b = append(b, '/')
	return append(b, name...)
}

// touch moves e to the front of the recency ring; c.mu is held.
func (c *versionCache) touch(e *cacheEntry) {
	if c.lru.next == e {
		return
	}
	if e.prev != nil {
		e.prev.next, e.next.prev = e.next, e.prev
	}
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

// remove drops e; c.mu is held.
func (c *versionCache) remove(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(c.entries, e.key)
	c.records -= e.records
	c.bytes -= e.bytes
}

// reset empties the cache; c.mu is held.
func (c *versionCache) reset() {
	c.entries = map[string]*cacheEntry{}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	c.records, c.bytes = 0, 0
}

// entry returns key's entry, at the front, creating it; c.mu is held.
func (c *versionCache) entry(key string) *cacheEntry {
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{key: key}
		c.entries[key] = e
	}
	c.touch(e)
	return e
}

// grow accounts for what was added to e and drops the least recently used
// entries until the cache is within its limits again (e last, when it
// alone exceeds them); c.mu is held.
func (c *versionCache) grow(e *cacheEntry, records int, bytes int64) {
	e.records += records
	e.bytes += bytes
	c.records += records
	c.bytes += bytes
	for (c.records > c.limits.Versions || c.bytes > c.limits.Bytes) && c.lru.prev != &c.lru {
		c.remove(c.lru.prev)
	}
}

func (c *versionCache) get(key string) ([]Record, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return nil, c.gen, false
	}
	e, ok := c.entries[key]
	if !ok || !e.hasVersions {
		c.stats.count(false)
		return nil, c.gen, false
	}
	c.touch(e)
	c.stats.count(true)
	return e.versions, c.gen, true
}

func (c *versionCache) put(key string, v []Record, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching || gen != c.gen {
		return
	}
	e := c.entry(key)
	if e.hasVersions {
		return
	}
	e.versions, e.hasVersions = v, true
	c.grow(e, len(v), int64(len(v))*decodedRecordBytes)
}

// getRaw returns one version's cached JSON.
func (c *versionCache) getRaw(key, version string) (*CachedVersion, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return nil, c.gen, false
	}
	v, ok := c.rawOf(c.entries[key], version)
	return v, c.gen, ok
}

// getRawOf is getRaw of a capability named by its parts, its key built
// without allocating (the GET fast path).
func (c *versionCache) getRawOf(scheme, domain, name, version string) (*CachedVersion, bool) {
	var buf [cacheKeyBuf]byte
	key := appendCacheKey(buf[:0], scheme, domain, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return nil, false
	}
	return c.rawOf(c.entries[string(key)], version)
}

// rawOf returns e's cached JSON of version, counting the hit or miss and
// making e the most recent on a hit; e may be nil; c.mu is held.
func (c *versionCache) rawOf(e *cacheEntry, version string) (*CachedVersion, bool) {
	if e == nil {
		c.stats.count(false)
		return nil, false
	}
	v, ok := e.raw[version]
	if ok {
		c.touch(e)
	}
	c.stats.count(ok)
	return v, ok
}

// putRaw caches one version's JSON read from the store at gen; nil
// records that the store holds no such version (a registration's event
// drops it with the capability's entry).
func (c *versionCache) putRaw(key, version string, v *CachedVersion, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching || gen != c.gen {
		return
	}
	e := c.entry(key)
	if _, ok := e.raw[version]; ok {
		return
	}
	if e.raw == nil {
		e.raw = map[string]*CachedVersion{}
	}
	e.raw[version] = v
	size := int64(len(key) + len(version) + rawOverhead)
	if v != nil {
		size += int64(len(v.Definition))
	}
	c.grow(e, 1, size)
}

// getDecoded returns the decoded definition of one version when it was
// decoded from the same JSON.
func (c *versionCache) getDecoded(key, version string, json []byte) (capability.Definition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return capability.Definition{}, false
	}
	e, ok := c.entries[key]
	if !ok {
		return capability.Definition{}, false
	}
	d, ok := e.decoded[version]
	if !ok || !bytes.Equal(d.json, json) {
		return capability.Definition{}, false
	}
	c.touch(e)
	return d.def, true
}

// putDecoded caches one version's definition decoded from json. Being
// checked against the JSON when read, it needs no generation.
func (c *versionCache) putDecoded(key, version string, json []byte, def capability.Definition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watching {
		return
	}
	e := c.entry(key)
	if e.decoded == nil {
		e.decoded = map[string]*decodedVersion{}
	}
	if old, ok := e.decoded[version]; ok {
		c.grow(e, -1, -int64(len(old.json)+decodedRecordBytes))
	}
	e.decoded[version] = &decodedVersion{json: json, def: def}
	c.grow(e, 1, int64(len(json)+decodedRecordBytes))
}

func (c *versionCache) invalidate(key string) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.remove(e)
	}
	c.gen++
	c.mu.Unlock()
}

func (c *versionCache) setWatching(on bool) {
	c.mu.Lock()
	c.watching = on
	c.reset()
	c.gen++
	c.mu.Unlock()
}

// size returns the versions and estimated bytes the cache holds.
func (c *versionCache) size() (versions int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records, c.bytes
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

// decodeListed decodes a listed version, taking the definition from the
// cache when it was decoded from the same JSON. The definition may be
// shared: callers must not modify it.
func (s *Service) decodeListed(raw RawRecord) (Record, error) {
	if !s.cacheActive {
		return raw.Decode()
	}
	key := cacheKey(raw.Key.Scheme, raw.Key.Domain, raw.Key.Name)
	def, ok := s.cache.getDecoded(key, raw.Key.Version, raw.Definition)
	if ok {
		return Record{Key: raw.Key, Definition: def, Digest: raw.Digest, TrustTier: raw.TrustTier, RegisteredAt: raw.RegisteredAt, DeprecatedAt: raw.DeprecatedAt}, nil
	}
	rec, err := raw.Decode()
	if err != nil {
		return Record{}, err
	}
	s.cache.putDecoded(key, raw.Key.Version, raw.Definition, rec.Definition)
	return rec, nil
}

// CachedRaw returns one version's stored JSON from memory only, without
// reading the store: ok is false when it is not cached (or the Service
// keeps no cache, see WithCache), and the caller should then ask GetRaw.
// version must be the full version as the store keys it
// (capability.Version.Full); any other spelling is simply not found. It is
// the REST API's fast path for a GET of one version.
func (s *Service) CachedRaw(scheme, domain, name, version string) (*CachedVersion, bool) {
	if !s.cacheActive {
		return nil, false
	}
	v, ok := s.cache.getRawOf(scheme, domain, name, version)
	return v, ok && v != nil
}

// CachedAbsent reports whether the cache knows, without reading the
// store, that the store holds no such version (a GetRaw found none since
// the capability last changed): a GET without a scheme then looks for it
// under the next scheme.
func (s *Service) CachedAbsent(scheme, domain, name, version string) bool {
	if !s.cacheActive {
		return false
	}
	v, ok := s.cache.getRawOf(scheme, domain, name, version)
	return ok && v == nil
}

// cachedRaw returns one full version's stored JSON from the cache or the
// store (caching it).
func (s *Service) cachedRaw(ctx context.Context, k Key) (*CachedVersion, error) {
	key := cacheKey(k.Scheme, k.Domain, k.Name)
	v, gen, ok := s.cache.getRaw(key, k.Version)
	switch {
	case ok && v == nil:
		return nil, fmt.Errorf("capability %s: %w", k, ErrNotFound)
	case ok:
		return v, nil
	}
	raw, err := s.store.GetRaw(ctx, k)
	if errors.Is(err, ErrNotFound) && s.cacheActive {
		s.cache.putRaw(key, k.Version, nil, gen)
	}
	if err != nil {
		return nil, err
	}
	v = NewCachedVersion(raw)
	if s.cacheActive {
		s.cache.putRaw(key, k.Version, v, gen)
	}
	return v, nil
}
