package main

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/storetest"
)

// measureResolve resolves random loaded URIs through each target's
// Service from one client; the reference GETs the same versions by name
// and version with the official registry's query.
func (b *bench) measureResolve(round int) error {
	const label = "resolve a URI (Service.Resolve, 1 client)"
	for _, t := range b.targets {
		r := rand.New(rand.NewSource(int64(round + 1)))
		res := load.Drive(1, b.cfg.duration, func(int) error {
			_, err := t.svc.Resolve(b.ctx, b.defs[r.Intn(len(b.defs))].URI)
			return err
		})
		b.tab.add(label, kLatency, t.col, round, latencyStat(res))
	}
	if b.ref != nil {
		r := rand.New(rand.NewSource(int64(round + 1)))
		res := load.Drive(1, b.cfg.duration, func(int) error {
			return b.ref.get(b.ctx, &b.defs[r.Intn(len(b.defs))])
		})
		b.tab.add(label, kLatency, colRef, round, latencyStat(res))
		b.tab.note("resolve reference: the official registry's get of one version by name and version (its SQL, replayed with pgx).")
	}
	return nil
}

// measureList reads the first page of the latest versions (service and
// HTTP) and a page far into the list (by cursor), from one client.
func (b *bench) measureList(round int) error {
	page := b.cfg.pageSize
	first := fmt.Sprintf("list the first page (%d latest versions, Service.List)", page)
	deep := fmt.Sprintf("list a deep page by cursor (%d, 90%% in)", page)
	overHTTP := fmt.Sprintf("list the first page over HTTP (limit=%d)", page)
	for _, t := range b.targets {
		if t.deep == "" {
			cursor, err := deepCursor(b, t)
			if err != nil {
				return err
			}
			t.deep = cursor
		}
		b.tab.add(first, kLatency, t.col, round, latencyStat(load.Drive(1, b.cfg.duration, func(int) error {
			_, err := t.svc.List(b.ctx, registry.ListFilter{Limit: page})
			return err
		})))
		b.tab.add(deep, kLatency, t.col, round, latencyStat(load.Drive(1, b.cfg.duration, func(int) error {
			_, err := t.svc.List(b.ctx, registry.ListFilter{Limit: page, Cursor: t.deep})
			return err
		})))
		res := b.getLoad(t.srv.Base, 1, func(*rand.Rand) string { return "/registry/capabilities?limit=" + itoa(page) })
		b.tab.add(overHTTP, kLatency, t.col, round, latencyStat(res))
		if res.Total > 0 {
			b.tab.add("list the first page over HTTP: answer size", kBytes, t.col, round, stat{value: float64(res.Bytes) / float64(res.Total)})
		}
	}
	if b.ref != nil {
		b.tab.add(first, kLatency, colRef, round, latencyStat(load.Drive(1, b.cfg.duration, func(int) error {
			return b.ref.list(b.ctx, page, nil)
		})))
		b.tab.add(deep, kLatency, colRef, round, latencyStat(load.Drive(1, b.cfg.duration, func(int) error {
			return b.ref.list(b.ctx, page, b.ref.deep)
		})))
		b.tab.note("list reference: the official registry's list of latest versions, ORDER BY (server_name, version) LIMIT, a deep page by its row-constructor cursor (its SQL, replayed with pgx, rows decoded).")
	}
	if b.peer != nil && b.cfg.peerListPage != "" {
		path, _ := expand(b.cfg.peerListPage, map[string]string{"limit": itoa(page)})
		res := b.getLoad(b.peer.base, 1, func(*rand.Rand) string { return path })
		b.tab.add(overHTTP, kLatency, colRef, round, latencyStat(res))
		if res.Total > 0 {
			b.tab.add("list the first page over HTTP: answer size", kBytes, colRef, round, stat{value: float64(res.Bytes) / float64(res.Total)})
		}
		b.tab.note("list over HTTP reference: the peer's %s.", path)
	}
	return nil
}

// deepCursor walks t's list of latest versions to its end and returns the
// cursor of the page 90% of the way in.
func deepCursor(b *bench, t *target) (string, error) {
	var cursors []string
	cursor := ""
	for {
		p, err := t.svc.List(b.ctx, registry.ListFilter{Limit: b.cfg.pageSize, Cursor: cursor})
		if err != nil {
			return "", fmt.Errorf("%s: walk the list: %w", t.name, err)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
		cursors = append(cursors, cursor)
	}
	if len(cursors) == 0 {
		return "", fmt.Errorf("%s: the list of latest versions has one page only: load more capabilities (-n) or list less a page (-page)", t.name)
	}
	return cursors[len(cursors)*9/10], nil
}

// measureSearch searches, 10 results a page, through each target's
// search index (a Service with WithSearchIndex, built on first use) and
// through the store's own full-text search; the reference is the official
// registry's substring search.
func (b *bench) measureSearch(round int) error {
	const (
		idxLabel = "search, 10 results (Service.Search: the search index)"
		ownLabel = "search, 10 results (the store's own full-text search)"
	)
	for _, t := range b.targets {
		if t.idx == nil {
			if err := b.buildIndex(t); err != nil {
				return err
			}
		}
		r := rand.New(rand.NewSource(int64(round + 1)))
		b.tab.add(idxLabel, kLatency, t.col, round, latencyStat(load.Drive(1, b.cfg.duration, func(int) error {
			_, err := t.idx.Search(b.ctx, registry.SearchQuery{Text: storetest.SearchQuery(r), Filter: registry.ListFilter{Limit: 10}})
			return err
		})))
		r = rand.New(rand.NewSource(int64(round + 1)))
		b.tab.add(ownLabel, kLatency, t.col, round, latencyStat(load.Drive(1, b.cfg.duration, func(int) error {
			_, err := t.store.Search(b.ctx, registry.SearchQuery{Text: storetest.SearchQuery(r), Filter: registry.ListFilter{Limit: 10}})
			return err
		})))
	}
	if b.ref != nil {
		r := rand.New(rand.NewSource(int64(round + 1)))
		res := load.Drive(1, b.cfg.duration, func(int) error { return b.ref.search(b.ctx, storetest.SearchQuery(r), 10) })
		b.tab.add(idxLabel, kLatency, colRef, round, latencyStat(res))
		b.tab.add(ownLabel, kLatency, colRef, round, latencyStat(res))
		b.tab.note("search reference: the official registry's ?search= (ILIKE '%%text%%' on the name or the description, trigram-indexed; a phrase matches only as a whole), its SQL replayed with pgx; the same sample serves both search rows.")
	}
	return nil
}

// buildIndex opens a second store on t's database and a Service with the
// search index over it, and times the index's build (to its first answer).
func (b *bench) buildIndex(t *target) error {
	st, err := openStore(b.ctx, t.db)
	if err != nil {
		return err
	}
	start := time.Now()
	t.idx = registry.NewService(st, registry.WithLogger(quiet), registry.WithSearchIndex(true), registry.WithCache())
	if _, err := t.idx.Search(b.ctx, registry.SearchQuery{Text: "warm up"}); err != nil {
		return fmt.Errorf("%s: build the search index: %w", t.name, err)
	}
	b.tab.add("search index build (Service start to first answer)", kDuration, t.col, 0, stat{value: float64(time.Since(start))})
	return nil
}
