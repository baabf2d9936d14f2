// Package load is what the HTTP benchmarks under bench/ share: starting
// the real `caphub serve` binary, driving it from concurrent clients for a
// fixed time, and percentiles.
package load

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Serve builds caphub into dir, starts `caphub serve` on db at a free
// loopback port and waits until it answers /healthz. stop interrupts it and
// waits for it to end.
func Serve(dir, db string) (base string, srv *exec.Cmd, stop func()) {
	bin := filepath.Join(dir, "caphub")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/caphub").CombinedOutput(); err != nil {
		log.Fatalf("build caphub: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv = exec.Command(bin, "serve", "--addr", addr, "--db", db)
	srv.Stderr = io.Discard
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	stop = func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }
	base = "http://" + addr
	for i := 0; ; i++ {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 200 {
			stop()
			log.Fatal("caphub serve did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return base, srv, stop
}

// Result is what Run measured.
type Result struct {
	Total, Failed int64
	Duration      time.Duration
	Latencies     []time.Duration
}

// Run sends requests from clients concurrent clients for duration, each
// client c calling send(hc, c) in a loop; an error or a status other than
// 200 counts as failed. Every request's latency is kept.
func Run(clients int, duration time.Duration, send func(hc *http.Client, c int) (*http.Response, error)) Result {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}, Timeout: 10 * time.Second}
	var total, failed atomic.Int64
	lats := make([][]time.Duration, clients)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				resp, err := send(hc, c)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						failed.Add(1)
					}
				} else {
					failed.Add(1)
				}
				lats[c] = append(lats[c], time.Since(t0))
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	r := Result{Total: total.Load(), Failed: failed.Load(), Duration: duration}
	for _, l := range lats {
		r.Latencies = append(r.Latencies, l...)
	}
	return r
}

// Print writes the throughput and latency rows of a Markdown table, with
// its header.
func (r Result) Print() {
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| throughput | %.0f req/s (%d requests, %d failed) |\n", float64(r.Total)/r.Duration.Seconds(), r.Total, r.Failed)
	fmt.Printf("| latency p50 / p99 | %s / %s |\n", Pct(r.Latencies, 50), Pct(r.Latencies, 99))
}

// Pct is the p-th percentile of d, to the microsecond.
func Pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100].Round(time.Microsecond)
}
