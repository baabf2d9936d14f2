package testpeers

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Serve is a `caphub serve` a test started with StartServe.
type Serve struct {
	URL    string        // http://127.0.0.1:PORT
	Cmd    *exec.Cmd     // the process
	Exited chan struct{} // closed once the process has exited
	err    error         // how it exited (cmd.Wait's error), once Exited is closed
}

// Wait waits until the process has exited and returns how (exec.Cmd.Wait's
// error: nil for exit status 0).
func (s *Serve) Wait() error {
	<-s.Exited
	return s.err
}

// ServeOptions say how StartServe runs caphub serve.
type ServeOptions struct {
	Bin     string        // the caphub binary (Caphub(t) when "")
	Dir     string        // its working directory
	Env     []string      // added to the test's environment
	Flags   []string      // after serve --addr ADDR
	Logs    io.Writer     // its stdout and stderr
	LogText func() string // what it has logged so far, shown when the test fails
}

// StartServe starts caphub serve on a free loopback port, in a process
// group of its own, and waits (up to a minute) until /healthz answers 200,
// failing the test if it exits first. When the test ends it is sent
// SIGTERM, and its group is killed if it has not exited 10 s later; a failed
// test shows the end of its log.
func StartServe(t testing.TB, o ServeOptions) *Serve {
	t.Helper()
	if o.Bin == "" {
		o.Bin = Caphub(t)
	}
	if o.LogText == nil {
		o.LogText = func() string { return "" }
	}
	addr := FreeAddr(t)
	cmd := exec.Command(o.Bin, append([]string{"serve", "--addr", addr}, o.Flags...)...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = o.Logs, o.Logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Serve{URL: "http://" + addr, Cmd: cmd, Exited: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.Exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.Exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-s.Exited
		}
		if t.Failed() {
			t.Logf("caphub serve log (its end):\n%s", tailOf(o.LogText(), 8000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.Exited:
			t.Fatalf("caphub serve exited:\n%s", o.LogText())
		default:
		}
		if resp, err := http.Get(s.URL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("caphub serve did not become healthy:\n%s", o.LogText())
	return nil
}

// tailOf is the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
