package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caphub/caphub/registry"
)

// Environment of a writer process started by ConcurrentProcesses.
const (
	envWriter = "CAPHUB_STORETEST_WRITER" // the content group, 0 or 1
	envTarget = "CAPHUB_STORETEST_TARGET" // what open is given
	envStart  = "CAPHUB_STORETEST_START"  // when to start, Unix nanoseconds
	envPer    = "CAPHUB_STORETEST_PER"    // goroutines in the process
)

// processKey is the version every writer process puts.
var processKey = key("ossa", "race", "processes", "1.0.0")

func processRecord(group int) registry.Record {
	d := def("ossa", "race", "processes", "1.0.0")
	d.Description = "content group " + strconv.Itoa(group)
	return NewRecord(d)
}

// WriterProcess runs the writer when this test binary was started by
// ConcurrentProcesses, and then exits; otherwise it returns at once. Call it
// first thing in TestMain. open opens the store named by target (a path, a
// URL).
func WriterProcess(open func(ctx context.Context, target string) (registry.Store, error)) {
	group, ok := os.LookupEnv(envWriter)
	if !ok {
		return
	}
	os.Exit(runWriter(group, open))
}

func runWriter(groupText string, open func(ctx context.Context, target string) (registry.Store, error)) int {
	group, err1 := strconv.Atoi(groupText)
	start, err2 := strconv.ParseInt(os.Getenv(envStart), 10, 64)
	per, err3 := strconv.Atoi(os.Getenv(envPer))
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Println("error bad environment:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := open(ctx, os.Getenv(envTarget))
	if err != nil {
		fmt.Println("error open:", err)
		return 2
	}
	defer s.Close()
	time.Sleep(time.Until(time.Unix(0, start)))
	rec := processRecord(group)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < per; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Put(ctx, []registry.Record{rec})
			var ce *registry.ConflictError
			var line string
			switch {
			case errors.As(err, &ce):
				line = "conflict " + ce.ExistingDigest
			case err != nil:
				line = "error " + strings.ReplaceAll(err.Error(), "\n", " ")
			case res[0].Created:
				line = "created"
			default:
				line = "same"
			}
			mu.Lock()
			fmt.Println(line)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return 0
}

// ConcurrentProcesses starts procs copies of this test binary (which must
// call WriterProcess in TestMain) that put the same version from per
// goroutines each, half of the processes with one content and half with
// another, all at the same moment. Exactly one Put must create it; the other
// Puts of the winning content must succeed without creating, those of the
// other content must fail with a ConflictError naming the winner; s (a store
// on target) must then hold the winner's content.
func ConcurrentProcesses(t *testing.T, s registry.Store, target string, procs, per int) {
	outs := runWriterProcesses(t, target, procs, per)
	winner := processWinner(t, outs, per)
	want := [2]string{}
	want[winner] = "same"
	want[1-winner] = "conflict " + processRecord(winner).Digest
	for _, o := range outs {
		for _, l := range o.lines {
			if l != "created" && l != want[o.group] {
				t.Errorf("a writer of content %d got %q, want %q", o.group, l, want[o.group])
			}
		}
	}
	got, err := s.Get(t.Context(), processKey)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != processRecord(winner).Digest || got.Definition.Description != processRecord(winner).Definition.Description {
		t.Errorf("stored %s %q, want the winner's content", got.Digest, got.Definition.Description)
	}
}

// writerOutput is what one writer process of content group printed: a
// line per Put.
type writerOutput struct {
	group int
	lines []string
	err   error
}

// runWriterProcesses runs procs writer processes on target, of content p%2 each,
// all starting their per Puts two seconds from now, and returns what they
// printed.
func runWriterProcesses(t *testing.T, target string, procs, per int) []writerOutput {
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary: %v", err)
	}
	start := time.Now().Add(2 * time.Second).UnixNano()
	outs := make([]writerOutput, procs)
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), envWriter+"="+strconv.Itoa(p%2), envTarget+"="+target,
				envStart+"="+strconv.FormatInt(start, 10), envPer+"="+strconv.Itoa(per))
			b, err := cmd.CombinedOutput()
			outs[p] = writerOutput{group: p % 2, lines: strings.Split(strings.TrimSpace(string(b)), "\n"), err: err}
		}(p)
	}
	wg.Wait()
	return outs
}

// processWinner checks that every writer succeeded with per results and
// that exactly one Put created the version, and returns its content group.
func processWinner(t *testing.T, outs []writerOutput, per int) int {
	t.Helper()
	created, winner := 0, -1
	for _, o := range outs {
		if o.err != nil {
			t.Fatalf("writer process: %v: %s", o.err, strings.Join(o.lines, "\n"))
		}
		if len(o.lines) != per {
			t.Fatalf("writer process printed %d results, want %d: %q", len(o.lines), per, o.lines)
		}
		for _, l := range o.lines {
			if l == "created" {
				created++
				winner = o.group
			}
		}
	}
	if created != 1 {
		t.Fatalf("%d Puts created the version, want exactly 1", created)
	}
	return winner
}
