package main

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
)

// rssInterval is how often the server's VmRSS is read under load.
const rssInterval = 50 * time.Millisecond

// getPath is the REST path of one loaded version.
func (b *bench) getPath(i int) string {
	d := &b.defs[i]
	return "/registry/capabilities/" + url.PathEscape(d.Domain) + "/" + url.PathEscape(d.Name) + "@" + url.PathEscape(d.Version)
}

// measureGet GETs random loaded versions from 1 and -clients clients on
// each target's server, then the peer's entries; at -clients it reads
// the server's RSS during the load and after it.
func (b *bench) measureGet(round int) error {
	for _, n := range clientCounts(b.cfg.clients) {
		label := fmt.Sprintf("GET one version over HTTP, %d client%s", n, plural(n))
		for _, t := range b.targets {
			var stop func() int64
			if n == b.cfg.clients {
				stop = load.SampleRSS(t.srv.PID(), rssInterval)
			}
			res := b.getLoad(t.srv.Base, n, func(r *rand.Rand) string { return b.getPath(r.Intn(len(b.defs))) })
			b.tab.add(label, kLatency, t.col, round, latencyStat(res))
			if res.Total > 0 {
				b.tab.add("GET one version: answer size", kBytes, t.col, round, stat{value: float64(res.Bytes) / float64(res.Total)})
			}
			if stop != nil {
				b.addMemory(fmt.Sprintf("under the GET load (%d clients)", n), t.col, round, t.srv.PID(), stop())
			}
		}
		if b.peer != nil {
			var stop func() int64
			if n == b.cfg.clients && b.cfg.peerPID > 0 {
				stop = load.SampleRSS(b.cfg.peerPID, rssInterval)
			}
			p := b.peer
			res := b.getLoad(p.base, n, func(r *rand.Rand) string { return p.paths[r.Intn(len(p.paths))] })
			b.tab.add(label, kLatency, colRef, round, latencyStat(res))
			if res.Total > 0 {
				b.tab.add("GET one version: answer size", kBytes, colRef, round, stat{value: float64(res.Bytes) / float64(res.Total)})
			}
			if stop != nil {
				b.addMemory(fmt.Sprintf("under the GET load (%d clients)", n), colRef, round, b.cfg.peerPID, stop())
			}
			b.tab.note("GET reference: the peer at %s (-peer-url), %d of its entries (%s).", p.base, len(p.paths), b.cfg.peerGet)
		}
	}
	return nil
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
