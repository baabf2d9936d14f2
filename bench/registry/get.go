package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
)

// rssInterval is how often the server's VmRSS is read under load.
const rssInterval = 50 * time.Millisecond

// idleQuiet and idleWait: before the first reads, the server must have
// used no CPU for idleQuiet, waited for at most idleWait.
const (
	idleQuiet = time.Second
	idleWait  = 3 * time.Minute
)

// getPath is the REST path of one loaded version.
func (b *bench) getPath(i int) string {
	d := &b.defs[i]
	return "/registry/capabilities/" + url.PathEscape(d.Domain) + "/" + url.PathEscape(d.Name) + "@" + url.PathEscape(d.Version)
}

// measureGet GETs random loaded versions from 1 and -clients clients on
// each target's server, then the peer's entries; at -clients it reads
// the server's RSS during the load and after it. In the first round it
// first GETs every loaded version once (measured on its own row), so
// that the rows after it measure a registry that has read what it
// serves, as the peer holds its entries in memory from its start; it
// first waits until the server has gone idle after its start.
func (b *bench) measureGet(round int) error {
	if round == 0 {
		label := fmt.Sprintf("GET every version once, first reads (cache cold), %d clients", b.cfg.clients)
		for _, t := range b.targets {
			// What the server does after its start (its search index's
			// build) is not what a GET costs.
			if !load.WaitIdle(t.srv.PID(), idleQuiet, time.Now().Add(idleWait)) {
				b.cfg.progress.Printf("%s: the server did not go idle within %s after its start; measuring anyway", t.name, idleWait)
			}
			b.cfg.progress.Printf("%s: GET each of the %d versions once", t.name, len(b.defs))
			cpu0, cpuErr := load.CPUTime(t.srv.PID())
			res := b.firstReads(t.srv.Base, b.cfg.clients)
			b.tab.add(label, kLatency, t.col, round, latencyStat(res))
			if cpu1, err := load.CPUTime(t.srv.PID()); cpuErr == nil && err == nil {
				b.tab.add("server CPU time per first read", kDuration, t.col, round, stat{value: float64(cpu1-cpu0) / float64(res.Total)})
			}
		}
	}
	for _, n := range clientCounts(b.cfg.clients) {
		for _, t := range b.targets {
			b.getRow(n, t.col, round, t.srv.Base, t.srv.PID(), func(r *rand.Rand) string { return b.getPath(r.Intn(len(b.defs))) })
		}
		if p := b.peer; p != nil {
			b.getRow(n, colRef, round, p.base, b.cfg.peerPID, func(r *rand.Rand) string { return p.paths[r.Intn(len(p.paths))] })
			b.tab.note("GET reference: the peer at %s (-peer-url), %d of its entries (%s).", p.base, len(p.paths), b.cfg.peerGet)
		}
	}
	return nil
}

// getRow measures the GETs of path(r) on the server at base (process pid;
// 0: unknown) from n clients into column c: latency, the answer's size,
// and at -clients the server's CPU time per GET (what it spends on one,
// whatever else runs on the machine), the harness's own (the clients'),
// and the server's RSS.
func (b *bench) getRow(n int, c col, round int, base string, pid int, path func(r *rand.Rand) string) {
	var stop func() int64
	var cpu0 time.Duration
	cpuErr := errors.New("not read")
	if n == b.cfg.clients && pid > 0 {
		stop = load.SampleRSS(pid, rssInterval)
		cpu0, cpuErr = load.CPUTime(pid)
	}
	self0, selfErr := load.CPUTime(os.Getpid())
	res := b.getLoad(base, n, path)
	self1, selfErr1 := load.CPUTime(os.Getpid())
	b.tab.add(fmt.Sprintf("GET one version over HTTP, %d client%s", n, plural(n)), kLatency, c, round, latencyStat(res))
	if res.Total == 0 {
		return
	}
	b.tab.add("GET one version: answer size", kBytes, c, round, stat{value: float64(res.Bytes) / float64(res.Total)})
	if cpuErr == nil {
		if cpu1, err := load.CPUTime(pid); err == nil {
			b.tab.add(fmt.Sprintf("server CPU time per GET (%d clients)", n), kDuration, c, round, stat{value: float64(cpu1-cpu0) / float64(res.Total)})
		}
		if selfErr == nil && selfErr1 == nil {
			// The clients share the machine's cores with the server: what
			// they spend is not the server's to spend.
			b.tab.add(fmt.Sprintf("client (this harness) CPU time per GET (%d clients)", n), kDuration, c, round, stat{value: float64(self1-self0) / float64(res.Total)})
		}
	}
	if stop != nil {
		b.addMemory(fmt.Sprintf("under the GET load (%d clients)", n), c, round, pid, stop())
	}
}

// getLoad GETs base+path(r) from n clients for -duration, each client
// with its own random source.
func (b *bench) getLoad(base string, n int, path func(r *rand.Rand) string) load.Result {
	rands := make([]*rand.Rand, n)
	for c := range rands {
		rands[c] = rand.New(rand.NewSource(int64(c + 1)))
	}
	return load.Run(n, b.cfg.duration, func(hc *http.Client, c int) (*http.Response, error) {
		return hc.Get(base + path(rands[c]))
	})
}

// firstReads GETs every loaded version once, in a random order, from n
// clients sharing the work, as load.Run sends requests.
func (b *bench) firstReads(base string, n int) load.Result {
	order := rand.New(rand.NewSource(1)).Perm(len(b.defs))
	var next atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	var failed atomic.Int64
	var firstErr atomic.Pointer[error]
	lats := make([][]time.Duration, n)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(order)); i = next.Add(1) - 1 {
				t0 := time.Now()
				err := getOK(hc, base+b.getPath(order[i]))
				lats[c] = append(lats[c], time.Since(t0))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	r := load.Result{Total: int64(len(order)), Failed: failed.Load(), Duration: time.Since(start)}
	if e := firstErr.Load(); e != nil {
		r.FirstErr = *e
	}
	for _, l := range lats {
		r.Latencies = append(r.Latencies, l...)
	}
	return r
}

// getOK GETs url and reads the answer, which must be a success.
func getOK(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: %s", resp.Request.URL.Path, resp.Status)
	}
	return err
}

// addMemory records a server's peak VmRSS under a load, then its VmRSS
// (and of it, the pages of mapped files) and VmHWM right after it.
func (b *bench) addMemory(under string, c col, round, pid int, peak int64) {
	b.tab.add("server VmRSS, peak "+under, kBytes, c, round, stat{value: float64(peak)})
	if m, err := load.ReadMemory(pid); err == nil {
		b.tab.add("server VmRSS right after that load", kBytes, c, round, stat{value: float64(m.RSS)})
		b.tab.add("of which mapped files (RssFile: the binary, a mapped database)", kBytes, c, round, stat{value: float64(m.File)})
		b.tab.add("server VmHWM (peak since start) after that load", kBytes, c, round, stat{value: float64(m.HWM)})
	}
}

// clientCounts is 1 and n (once when n is 1).
func clientCounts(n int) []int {
	if n == 1 {
		return []int{1}
	}
	return []int{1, n}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// expand replaces each {field} of tmpl with fields[field], path-escaped;
// ok is false when a field is missing.
func expand(tmpl string, fields map[string]string) (string, bool) {
	var sb strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			sb.WriteString(tmpl)
			return sb.String(), true
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			sb.WriteString(tmpl)
			return sb.String(), true
		}
		v, ok := fields[tmpl[i+1:i+j]]
		if !ok {
			return "", false
		}
		sb.WriteString(tmpl[:i])
		sb.WriteString(url.PathEscape(v))
		tmpl = tmpl[i+j+1:]
	}
}

// itoa is strconv.Itoa, for templates.
func itoa(n int) string { return strconv.Itoa(n) }
