package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit/stats"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
)

// The overview's figures (the web UI's Overview page): what the registry
// holds and how the calls went, computed by package stats from the audit
// chain over a bounded window. Scope read: the figures are counts and
// latencies per capability, never a caller's inputs or who called (those
// stay in /v1/audit, admin only).

// Counts are how many of each thing caphub holds. PendingApprovals is
// absent when the server keeps no approvals.
type Counts struct {
	Capabilities     int  `json:"capabilities"`
	Versions         int  `json:"versions"`
	Servers          int  `json:"servers"`
	Agents           int  `json:"agents"`
	PendingApprovals *int `json:"pending_approvals,omitempty"`
}

// Stats is the answer of GET /v1/stats.
type Stats struct {
	Counts Counts        `json:"counts"`
	Calls  *stats.Result `json:"calls"`
}

func (s *Server) statsRoutes(agents *agent.Agents) []route {
	h := statsHandler{s: s, agents: agents}
	return []route{
		{method: "GET", path: "/v1/stats", scope: auth.ScopeRead, summary: "The overview: counts (capabilities, versions, saved servers, agents, pending approvals) and the calls of a recent window from the audit chain (per time bucket: calls, errors, held for approval, p50 and p95 latency; per capability, the most called first), reading at most max_events of the newest events",
			params: []param{
				{name: "window", in: "query", desc: "how far back, a duration such as 24h, 90m or 7d (default 24h, at most 31d)"},
				{name: "bucket", in: "query", desc: "the width of a time bucket, such as 1h or 15m (default 1h, at least 1m, at most 500 buckets)"},
				{name: "max_events", in: "query", desc: "the most audit events looked at, newest first (default and maximum 100000); calls.partial says the window held more", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": stats.DefaultMaxEvents}},
			},
			handler: h.get, responses: map[int]string{200: "counts and calls", 400: "a malformed window, bucket or max_events, or too many buckets"}},
	}
}

// statsTracker is the server's stats.Tracker over its store's chain, made
// at the first GET /v1/stats: later ones read only the events appended
// since.
func (s *Server) statsTracker() *stats.Tracker {
	s.statsOnce.Do(func() { s.stats = stats.NewTracker(s.svc.Store(), 0) })
	return s.stats
}

type statsHandler struct {
	s      *Server
	agents *agent.Agents
}

func (h statsHandler) get(w http.ResponseWriter, r *http.Request) error {
	o, err := statsOptions(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	var out Stats
	for _, c := range []struct {
		all bool
		dst *int
	}{{false, &out.Counts.Capabilities}, {true, &out.Counts.Versions}} {
		p, err := h.s.svc.List(ctx, registry.ListFilter{AllVersions: c.all, Limit: 1, CountTotal: true})
		if err != nil {
			return err
		}
		*c.dst = p.Total
	}
	servers, err := h.s.servers.ListServers(ctx)
	if err != nil {
		return err
	}
	out.Counts.Servers = len(servers)
	if h.agents != nil {
		ags, err := h.agents.List(ctx)
		if err != nil {
			return err
		}
		out.Counts.Agents = len(ags)
	}
	if h.s.approvals != nil {
		pending, err := h.s.approvals.List(ctx, policy.StatusPending)
		if err != nil {
			return err
		}
		n := len(pending)
		out.Counts.PendingApprovals = &n
	}
	if out.Calls, err = h.s.statsTracker().Compute(ctx, o); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out, h.s.log)
	return nil
}

// statsOptions reads window, bucket and max_events.
func statsOptions(r *http.Request) (stats.Options, error) {
	q := r.URL.Query()
	var o stats.Options
	var err error
	if o.Window, err = days(q.Get("window"), "window"); err != nil {
		return o, err
	}
	if o.Bucket, err = days(q.Get("bucket"), "bucket"); err != nil {
		return o, err
	}
	if v := q.Get("max_events"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > stats.DefaultMaxEvents {
			return o, badRequest(fmt.Sprintf("max_events=%q: give a number from 1 to %d", v, stats.DefaultMaxEvents))
		}
		o.MaxEvents = n
	}
	if err := o.Check(); err != nil {
		return o, badRequest(err.Error())
	}
	return o, nil
}

// days reads a Go duration, or a whole number of days ("7d"); "" is 0.
func days(v, name string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(v, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d > 0 && d <= 366 {
			return time.Duration(d) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, badRequest(fmt.Sprintf("%s=%q: give a duration such as 24h, 15m or 7d", name, v))
}
