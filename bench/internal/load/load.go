// Package load is what the HTTP benchmarks under bench/ share: building and
// starting the real `caphub serve` binary, driving it (or any operation)
// from concurrent clients for a fixed time, reading a process's memory
// from /proc, and percentiles.
package load

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// caphubPackage is the command Build builds: named by import path, so that
// a build from any directory of the module (a test's) finds it.
const caphubPackage = "github.com/caphub/caphub/cmd/caphub"

// Build builds caphub into dir and returns the binary's path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "caphub")
	if out, err := exec.Command("go", "build", "-o", bin, caphubPackage).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build caphub: %v\n%s", err, out)
	}
	return bin, nil
}

// Server is a `caphub serve` process started by Start.
type Server struct {
	// Base is its URL, http://127.0.0.1:PORT.
	Base string
	// Cmd is the process.
	Cmd *exec.Cmd
	// LogPath holds its standard error and output.
	LogPath string
	done    chan struct{}
	once    sync.Once
}

// StartTimeout is how long Start waits for /healthz to answer.
const StartTimeout = 2 * time.Minute

// Start runs `bin serve --addr 127.0.0.1:PORT --db db args…` at a free
// loopback port, its output in logPath, and waits until it answers
// /healthz (at most StartTimeout). The error of a server that ended or
// never answered quotes the end of its log.
func Start(bin, db, logPath string, args ...string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--db", db}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Base: "http://" + addr, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(s.done) }()
	hc := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(StartTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("caphub serve --db %s ended before it answered /healthz; its log %s ends:\n%s", redact(db), logPath, Tail(logPath))
		default:
		}
		if resp, err := hc.Get(s.Base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
	}
	s.Stop()
	return nil, fmt.Errorf("caphub serve --db %s did not answer /healthz within %s; its log %s ends:\n%s", redact(db), StartTimeout, logPath, Tail(logPath))
}

// redact drops a password from a database URL for messages.
func redact(db string) string {
	if i, j := strings.Index(db, "://"), strings.LastIndex(db, "@"); i >= 0 && j > i {
		if k := strings.Index(db[i+3:j], ":"); k >= 0 {
			return db[:i+3+k] + ":…" + db[j:]
		}
	}
	return db
}

// PID is the server's process id.
func (s *Server) PID() int { return s.Cmd.Process.Pid }

// Stop interrupts the server and waits for it to end (killing it after 10
// seconds). Calling it again does nothing.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.Cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.Cmd.Process.Kill()
			<-s.done
		}
	})
}

// Tail is the end of a log file (2,000 bytes at most).
func Tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Serve builds caphub into dir, starts `caphub serve` on db at a free
// loopback port and waits until it answers /healthz. stop interrupts it and
// waits for it to end. Any failure ends the program (log.Fatal).
func Serve(dir, db string) (base string, srv *exec.Cmd, stop func()) {
	bin, err := Build(dir)
	if err != nil {
		log.Fatal(err)
	}
	s, err := Start(bin, db, filepath.Join(dir, "serve.log"))
	if err != nil {
		log.Fatal(err)
	}
	return s.Base, s.Cmd, s.Stop
}

// Memory is a process's resident memory from /proc/PID/status, in bytes:
// RSS now (VmRSS) and its peak so far (VmHWM), and of RSS the anonymous
// memory (RssAnon: the heap, stacks, C allocations) and the pages of
// mapped files (RssFile: the binary, a database's mmap), which the kernel
// can drop and read again.
type Memory struct{ RSS, HWM, Anon, File int64 }

// ReadMemory reads pid's Memory.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "VmHWM:":
			m.HWM = kb << 10
		case "RssAnon:":
			m.Anon = kb << 10
		case "RssFile:":
			m.File = kb << 10
		}
	}
	if m.RSS == 0 && m.HWM == 0 {
		return m, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
	}
	return m, nil
}

// CPUTime is the CPU time pid has used (utime+stime from /proc/PID/stat,
// counted by the kernel in ticks of 10 ms).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: too few fields")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: utime or stime is not a number")
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// WaitIdle waits until pid uses no CPU for quiet (checked every 250 ms),
// at most until deadline, and reports whether it became idle.
func WaitIdle(pid int, quiet time.Duration, deadline time.Time) bool {
	last, err := CPUTime(pid)
	if err != nil {
		return false
	}
	since := time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		cpu, err := CPUTime(pid)
		if err != nil {
			return false
		}
		if cpu != last {
			last, since = cpu, time.Now()
		} else if time.Since(since) >= quiet {
			return true
		}
	}
	return false
}

// SampleRSS reads pid's VmRSS every interval until the returned stop is
// called, which returns the largest VmRSS seen (bytes; 0 when none could
// be read).
func SampleRSS(pid int, interval time.Duration) (stop func() int64) {
	var peak atomic.Int64
	read := func() {
		if m, err := ReadMemory(pid); err == nil && m.RSS > peak.Load() {
			peak.Store(m.RSS)
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() int64 {
		once.Do(func() { close(done); <-finished; read() })
		return peak.Load()
	}
}

// Result is what Run or Drive measured.
type Result struct {
	Total, Failed int64
	Duration      time.Duration
	Latencies     []time.Duration
	// Bytes is the size of every answer body read, summed (Run only).
	Bytes int64
	// FirstErr is the first failure seen, to say why (nil: none).
	FirstErr error
}

// Rate is the successful operations per second.
func (r Result) Rate() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Total-r.Failed) / r.Duration.Seconds()
}

// Drive calls op from clients concurrent goroutines for duration, each
// client c calling op(c) in a loop; an error counts as failed. Every
// call's latency is kept.
func Drive(clients int, duration time.Duration, op func(c int) error) Result {
	var total, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	lats := make([][]time.Duration, clients)
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				err := op(c)
				lats[c] = append(lats[c], time.Since(t0))
				total.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	r := Result{Total: total.Load(), Failed: failed.Load(), Duration: time.Since(start)}
	if e := firstErr.Load(); e != nil {
		r.FirstErr = *e
	}
	for _, l := range lats {
		r.Latencies = append(r.Latencies, l...)
	}
	return r
}

// Run sends requests from clients concurrent clients for duration, each
// client c calling send(hc, c) in a loop; an error or a status other than
// 2xx counts as failed. Every request's latency is kept, and the size of
// the answers read.
func Run(clients int, duration time.Duration, send func(hc *http.Client, c int) (*http.Response, error)) Result {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}, Timeout: 60 * time.Second}
	var bytes atomic.Int64
	r := Drive(clients, duration, func(c int) error {
		resp, err := send(hc, c)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		bytes.Add(n)
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("%s %s: %s", resp.Request.Method, resp.Request.URL.Path, resp.Status)
		}
		return err
	})
	hc.CloseIdleConnections()
	r.Bytes = bytes.Load()
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
