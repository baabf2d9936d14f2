package registry

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// maxGroupRecords bounds the records of one shared transaction: a group
// takes queued registrations while they fit (and always at least one).
const maxGroupRecords = 512

// groupTimeout bounds a transaction shared by several registrations,
// which no single caller's context may cancel.
const groupTimeout = 2 * time.Minute

// groupCommit batches the writes of concurrent registrations into shared
// transactions (a group commit, as the audit log's writer does for
// events): while one transaction runs, the registrations that arrive
// queue, and the first of them then stores the whole queue in one
// transaction, each registration with its own audit events. Each caller
// still gets its own results: when a shared transaction fails, its
// registrations are stored again one by one, so that a conflict in one
// does not refuse the others. Without it, concurrent registrations would
// each pay a commit and queue for the store's single writer (SQLite) or
// the audit chain's lock (PostgreSQL) one at a time.
type groupCommit struct {
	mu      sync.Mutex
	queue   []*putRequest
	running bool // a group is being stored; its leader hands over when done
}

// putRequest is one registration's write waiting for, or in, a group.
type putRequest struct {
	ctx  context.Context
	recs []Record
	hook *chain.Hook // nil: no recorder

	res []PutResult
	err error

	done   chan struct{} // closed once res and err are set
	lead   chan struct{} // closed when this request is to store the next group
	leader bool          // lead was closed (under groupCommit.mu)
	taken  bool          // in a group (under groupCommit.mu)
}

// groupPut stores recs with hook through the group commit and returns their
// results as Store.PutAudited (Store.Put without a hook) would.
func (s *Service) groupPut(ctx context.Context, recs []Record, hook *chain.Hook) ([]PutResult, error) {
	g := &s.group
	req := &putRequest{ctx: ctx, recs: recs, hook: hook, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if !g.running {
		g.running = true
		req.leader = true
		g.mu.Unlock()
		s.storeGroups()
		<-req.done
		return req.res, req.err
	}
	g.mu.Unlock()
	for {
		select {
		case <-req.done:
			return req.res, req.err
		case <-req.lead:
			s.storeGroups()
			<-req.done
			return req.res, req.err
		case <-ctx.Done():
			g.mu.Lock()
			if !req.taken && !req.leader {
				g.queue = slices.DeleteFunc(g.queue, func(r *putRequest) bool { return r == req })
				g.mu.Unlock()
				return nil, ctx.Err()
			}
			g.mu.Unlock()
			// In a group (its outcome will be reported truthfully), or
			// leading one: wait for it.
			ctx = context.Background()
		}
	}
}

// storeGroups stores the group at the head of the queue (whose first
// request is the caller's), then hands the lead to the next queued request,
// or ends when none is left.
func (s *Service) storeGroups() {
	g := &s.group
	g.mu.Lock()
	n, records := 0, 0
	for n < len(g.queue) && (n == 0 || records+len(g.queue[n].recs) <= maxGroupRecords) {
		records += len(g.queue[n].recs)
		g.queue[n].taken = true
		n++
	}
	batch := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()

	s.storeGroup(batch)

	g.mu.Lock()
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.leader = true
		close(next.lead)
	} else {
		g.running = false
	}
	g.mu.Unlock()
}

// storeGroup stores the requests of batch, in one transaction when it can,
// and reports to each.
func (s *Service) storeGroup(batch []*putRequest) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	var live []*putRequest
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err // gave up before its group began: nothing stored
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		r := live[0]
		r.res, r.err = s.putNow(r.ctx, r.recs, r.hook)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), groupTimeout)
	defer cancel()
	var recs []Record
	var hook *chain.Hook
	for _, r := range live {
		recs = append(recs, r.recs...)
		if r.hook != nil {
			if hook == nil {
				hook = &chain.Hook{Chain: r.hook.Chain}
			}
			hook.Events = append(hook.Events, r.hook.Events...)
		}
	}
	res, err := s.putNow(ctx, recs, hook)
	if err == nil {
		off := 0
		for _, r := range live {
			r.res = res[off : off+len(r.recs) : off+len(r.recs)]
			off += len(r.recs)
		}
		return
	}
	// One of them is refused (a conflict), or the transaction failed:
	// each on its own, so each gets its own answer.
	for _, r := range live {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(r.ctx), groupTimeout)
		r.res, r.err = s.putNow(rctx, r.recs, r.hook)
		rcancel()
	}
}

// putNow stores recs in one transaction, with hook's events when there is
// a hook.
func (s *Service) putNow(ctx context.Context, recs []Record, hook *chain.Hook) ([]PutResult, error) {
	if hook == nil {
		return s.store.Put(ctx, recs)
	}
	return s.store.PutAudited(ctx, recs, hook)
}
