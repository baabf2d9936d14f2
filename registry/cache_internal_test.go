package registry

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

func newTestCache(l CacheLimits) *versionCache {
	c := &versionCache{limits: l}
	c.reset()
	c.setWatching(true)
	return c
}

func rawOf(n int) *CachedVersion {
	return NewCachedVersion(RawRecord{Definition: bytes.Repeat([]byte("x"), n), Digest: "d"})
}

// The cache stays within its bounds, dropping the least recently used
// capabilities first; a read keeps a capability in.
func TestCacheBoundsAndRecency(t *testing.T) {
	c := newTestCache(CacheLimits{Versions: 3, Bytes: 1 << 20})
	_, gen, _ := c.getRaw("a", "1.0.0")
	for _, k := range []string{"a", "b", "c"} {
		c.putRaw(k, "1.0.0", rawOf(10), gen)
	}
	if _, _, ok := c.getRaw("a", "1.0.0"); !ok { // a is now the most recent
		t.Fatal("a not cached")
	}
	c.putRaw("d", "1.0.0", rawOf(10), gen)
	if _, _, ok := c.getRaw("b", "1.0.0"); ok {
		t.Error("b, the least recently used, was kept past the bound")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, _, ok := c.getRaw(k, "1.0.0"); !ok {
			t.Errorf("%s dropped; only b should be", k)
		}
	}
	if n, _ := c.size(); n != 3 {
		t.Errorf("%d versions held; want 3", n)
	}

	// By bytes: each raw version counts its JSON and overhead.
	per := int64(1000 + len("k0") + len("1.0.0") + rawOverhead)
	c = newTestCache(CacheLimits{Versions: 100, Bytes: 4 * per})
	for i := range 10 {
		c.putRaw(fmt.Sprintf("k%d", i), "1.0.0", rawOf(1000), gen)
		if _, b := c.size(); b > 4*per {
			t.Fatalf("after %d puts the cache holds %d bytes; bound %d", i+1, b, 4*per)
		}
	}
	if n, _ := c.size(); n != 4 {
		t.Errorf("%d versions held; want 4", n)
	}
	// A version list counts decodedRecordBytes a record.
	c = newTestCache(CacheLimits{Versions: 100, Bytes: 2 * decodedRecordBytes})
	c.put("list", make([]Record, 2), gen)
	c.put("other", make([]Record, 1), gen)
	if _, _, ok := c.get("list"); ok {
		t.Error("a version list past the byte bound was kept")
	}
	if _, b := c.size(); b != decodedRecordBytes {
		t.Errorf("%d bytes held; want %d", b, decodedRecordBytes)
	}
}

// The default limits hold a registry of 100,000 versions of about 850
// bytes of JSON each (storetest.Synthetic's), keys as long as
// "ossa:analytics/list_event_0", so that none of them is read from the
// store twice.
func TestDefaultCacheHolds100kVersions(t *testing.T) {
	const n, json, key, version = 100_000, 850, len("ossa:analytics/list_event_0"), len("2.1.0")
	if need := int64(n * (json + key + version + rawOverhead)); need > DefaultCacheLimits.Bytes {
		t.Errorf("%d versions count %d bytes; the default bound is %d", n, need, DefaultCacheLimits.Bytes)
	}
	if DefaultCacheLimits.Versions < n {
		t.Errorf("the default bound is %d versions; want at least %d", DefaultCacheLimits.Versions, n)
	}
}

// Content read before an invalidation is not cached after it, and an
// invalidation drops a capability's list and raw versions alike.
func TestCacheInvalidation(t *testing.T) {
	c := newTestCache(DefaultCacheLimits)
	_, gen, _ := c.getRaw("a", "1.0.0")
	c.put("a", make([]Record, 1), gen)
	c.putRaw("a", "1.0.0", rawOf(1), gen)
	c.invalidate("a")
	if _, _, ok := c.get("a"); ok {
		t.Error("version list kept after invalidation")
	}
	if _, _, ok := c.getRaw("a", "1.0.0"); ok {
		t.Error("raw version kept after invalidation")
	}
	c.putRaw("a", "1.0.0", rawOf(1), gen) // read before the invalidation
	if _, _, ok := c.getRaw("a", "1.0.0"); ok {
		t.Error("a read that raced an invalidation was cached")
	}
	if n, b := c.size(); n != 0 || b != 0 {
		t.Errorf("empty cache holds %d versions, %d bytes", n, b)
	}
	c.setWatching(false)
	_, gen, _ = c.getRaw("a", "1.0.0")
	c.putRaw("a", "1.0.0", rawOf(1), gen)
	if _, _, ok := c.getRaw("a", "1.0.0"); ok {
		t.Error("cached while not watching")
	}
}

// A cached version is looked up by its parts without allocating: the
// GET fast path builds the key on the stack.
func TestCachedRawLookupAllocatesNothing(t *testing.T) {
	c := newTestCache(DefaultCacheLimits)
	_, gen, _ := c.getRaw(cacheKey("ossa", "fast", "thing"), "1.0.0")
	c.putRaw(cacheKey("ossa", "fast", "thing"), "1.0.0", rawOf(10), gen)
	if _, ok := c.getRawOf("ossa", "fast", "thing", "1.0.0"); !ok {
		t.Fatal("ossa:fast/thing@1.0.0 not found by its parts")
	}
	if n := testing.AllocsPerRun(100, func() { c.getRawOf("ossa", "fast", "thing", "1.0.0") }); n != 0 {
		t.Errorf("a lookup allocates %v times; want 0", n)
	}
}

// BenchmarkCachedRawLookup looks up random versions of a cache holding
// 100,000 (33,000 capabilities of three versions), from parallel
// goroutines, as the GET fast path does under load.
func BenchmarkCachedRawLookup(b *testing.B) {
	const caps, versions = 33_000, 3
	c := newTestCache(DefaultCacheLimits)
	_, gen, _ := c.getRaw("", "")
	names := make([]string, caps)
	for i := range names {
		names[i] = fmt.Sprintf("name_%d", i)
		for v := range versions {
			c.putRaw(cacheKey("ossa", "domain", names[i]), fmt.Sprintf("1.%d.0", v), rawOf(840), gen)
		}
	}
	vers := []string{"1.0.0", "1.1.0", "1.2.0"}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewSource(1))
		for pb.Next() {
			if _, ok := c.getRawOf("ossa", "domain", names[r.Intn(caps)], vers[r.Intn(versions)]); !ok {
				b.Fatal("not cached")
			}
		}
	})
}
