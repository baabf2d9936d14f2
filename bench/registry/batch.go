package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
	"github.com/caphub/caphub/capability"
)

// maxReply bounds a reply the batch reads (the items of 60k results).
const maxReply = 512 << 20

// leanDefinition is the i-th definition of the batch: small (about 250
// bytes of JSON, so that 60k make the ~15 MB document of the issue), with
// one http binding, under a name unique to the run.
func leanDefinition(run string, i int) capability.Definition {
	domain := "bulk" + strconv.Itoa(i%50)
	name := "item_" + run + "_" + strconv.Itoa(i)
	return capability.Definition{
		URI:         capability.NewURI(capability.SchemeOSSA, domain, name, capability.MustParseVersion("1.0.0")).String(),
		Name:        name,
		Domain:      domain,
		Version:     "1.0.0",
		Description: "Fetch item " + strconv.Itoa(i) + " of the bulk catalogue by its id.",
		Input:       capability.Schema{"type": "object"},
		Output:      capability.Schema{},
		Bindings:    capability.Bindings{HTTP: &capability.HTTPBinding{Method: "GET", URL: "https://bulk.example.com/items/" + strconv.Itoa(i)}},
	}
}

// batchOutcome is what the batch's client saw.
type batchOutcome struct {
	wall     time.Duration
	status   int
	complete bool   // the reply (or the job's end) accounted for every definition
	detail   string // what the client got, in words
}

// measureBatch posts -batch-defs definitions in one request to a fresh
// `caphub serve` on t's database (so that its VmHWM is the batch's own
// peak) and records the wall time, whether the reply was whole, how many
// versions the store gained and the server's peak RSS. A 202 answer with
// a Location is followed until the job ends.
func (b *bench) measureBatch(t *target) error {
	n := b.cfg.batchDefs
	defs := make([]capability.Definition, n)
	for i := range defs {
		defs[i] = leanDefinition(b.writes.run, i)
	}
	doc, err := json.Marshal(map[string]any{"capabilities": defs})
	if err != nil {
		return err
	}
	srv, err := b.serve(t, "serve-"+strings.ToLower(t.name)+"-batch")
	if err != nil {
		return err
	}
	stop := load.SampleRSS(srv.PID(), rssInterval)
	start := time.Now()
	out := postBatch(srv.Base, doc, n, b.cfg.batchTimeout)
	// A server that gave up answering may still be working on the batch
	// (and commit it): wait until it is idle before counting.
	idle := load.WaitIdle(srv.PID(), 2*time.Second, start.Add(b.cfg.batchTimeout))
	busy := time.Since(start)
	peak := stop()
	mem, _ := load.ReadMemory(srv.PID())
	srv.Stop()
	committed, err := stored(b.ctx, t.store, defs)
	if err != nil {
		return err
	}
	label := fmt.Sprintf("batch of %d definitions in one POST", n)
	b.tab.add(label+": request size", kBytes, t.col, 0, stat{value: float64(len(doc))})
	b.tab.add(label+": wall time", kDuration, t.col, 0, stat{value: float64(out.wall)})
	b.tab.add(label+": the client got the whole reply", kText, t.col, 0, stat{text: out.detail})
	if !out.complete {
		work := fmt.Sprintf("idle %s after the POST", busy.Round(time.Second))
		if !idle {
			work = fmt.Sprintf("still busy %s after the POST (-batch-timeout)", busy.Round(time.Second))
		}
		b.tab.add(label+": the server's work", kText, t.col, 0, stat{text: work})
	}
	b.tab.add(label+": versions committed", kCount, t.col, 0, stat{value: float64(committed)})
	b.tab.add(label+": server peak RSS (VmHWM)", kBytes, t.col, 0, stat{value: float64(max(mem.HWM, peak))})
	return nil
}

// postBatch posts doc and reads the reply, following a 202's Location
// until the job ends, within timeout.
func postBatch(base string, doc []byte, n int, timeout time.Duration) batchOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hc := &http.Client{}
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/registry/capabilities", bytes.NewReader(doc))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return batchOutcome{wall: time.Since(start), detail: "no: " + shortErr(err)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	resp.Body.Close()
	out := batchOutcome{status: resp.StatusCode}
	switch {
	case err != nil:
		out.detail = fmt.Sprintf("no: %s, then the body broke off after %d bytes (%s)", resp.Status, len(data), shortErr(err))
	case resp.StatusCode == http.StatusAccepted && resp.Header.Get("Location") != "":
		out = followJob(ctx, hc, base, resp.Header.Get("Location"), n)
	default:
		out.complete, out.detail = judgeReply(resp.StatusCode, data, n)
	}
	out.wall = time.Since(start)
	return out
}

// judgeReply says whether a reply accounts for all n definitions.
func judgeReply(status int, data []byte, n int) (bool, string) {
	if len(bytes.TrimSpace(data)) == 0 {
		return false, fmt.Sprintf("no: %d with an empty body", status)
	}
	var reply struct {
		Items  []json.RawMessage `json:"items"`
		Title  string            `json:"title"`
		Detail string            `json:"detail"`
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return false, fmt.Sprintf("no: %d with %d bytes that are not JSON (%s)", status, len(data), shortErr(err))
	}
	if status >= 300 {
		return false, fmt.Sprintf("no: %d %s: %.160s", status, reply.Title, reply.Detail)
	}
	if len(reply.Items) != n {
		return false, fmt.Sprintf("no: %d with %d of %d results", status, len(reply.Items), n)
	}
	return true, fmt.Sprintf("yes: %d, %d results (%s)", status, n, size(float64(len(data))))
}

// jobDone are the states that end a job, by what they say of it.
var jobDone = map[string]bool{"done": true, "succeeded": true, "completed": true, "complete": true, "finished": true, "success": true,
	"failed": false, "error": false, "cancelled": false, "canceled": false}

// followJob polls a job's status URL until it says it ended (a state of
// jobDone), answers anything but 200/202, or ctx ends.
func followJob(ctx context.Context, hc *http.Client, base, location string, n int) batchOutcome {
	u, err := url.Parse(location)
	if err != nil {
		return batchOutcome{detail: "no: 202 with a Location that is not a URL: " + location}
	}
	if !u.IsAbs() {
		u, _ = url.Parse(base + location)
	}
	polls := 0
	for {
		polls++
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		resp, err := hc.Do(req)
		if err != nil {
			return batchOutcome{detail: fmt.Sprintf("no: 202, then polling %s failed after %d polls: %s", location, polls, shortErr(err))}
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		resp.Body.Close()
		state := jobState(data)
		ok, ended := jobDone[state]
		switch {
		case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted:
			return batchOutcome{status: resp.StatusCode, detail: fmt.Sprintf("no: 202, then the job's status answered %s: %.160s", resp.Status, data)}
		case ended:
			word := "yes"
			if !ok {
				word = "no"
			}
			if c, detail := judgeReply(resp.StatusCode, data, n); c {
				return batchOutcome{status: resp.StatusCode, complete: ok, detail: fmt.Sprintf("%s: 202 + job %s after %d polls; %s", word, state, polls, detail)}
			}
			return batchOutcome{status: resp.StatusCode, complete: ok, detail: fmt.Sprintf("%s: 202 + job %s after %d polls: %.200s", word, state, polls, data)}
		}
		select {
		case <-ctx.Done():
			return batchOutcome{detail: fmt.Sprintf("no: 202, and the job had not ended when the client gave up (%d polls, last: %.160s)", polls, data)}
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// jobState reads a job document's state ("status" or "state"), lower-case.
func jobState(data []byte) string {
	var doc struct {
		Status any    `json:"status"`
		State  string `json:"state"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return ""
	}
	if s, ok := doc.Status.(string); ok && s != "" {
		return strings.ToLower(s)
	}
	return strings.ToLower(doc.State)
}

// shortErr is an error's message, the context deadline said plainly.
func shortErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the client's -batch-timeout passed"
	}
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
