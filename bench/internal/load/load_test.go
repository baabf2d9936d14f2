package load

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestProcReadings(t *testing.T) {
	pid := os.Getpid()
	m, err := ReadMemory(pid)
	if err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("ReadMemory = %+v, %v", m, err)
	}
	stop := SampleRSS(pid, time.Millisecond)
	before, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	after, _ := CPUTime(pid)
	if after <= before {
		t.Errorf("CPU time %s after 100 ms of spinning, %s before", after, before)
	}
	if peak := stop(); peak <= 0 {
		t.Errorf("SampleRSS peak %d", peak)
	}
	if _, err := ReadMemory(1 << 30); err == nil {
		t.Error("ReadMemory of no process: no error")
	}
}

func TestDriveCountsFailures(t *testing.T) {
	boom := errors.New("boom")
	r := Drive(3, 50*time.Millisecond, func(c int) error {
		time.Sleep(time.Millisecond)
		if c == 0 {
			return boom
		}
		return nil
	})
	if r.Total == 0 || r.Failed == 0 || r.Failed >= r.Total || !errors.Is(r.FirstErr, boom) || len(r.Latencies) != int(r.Total) {
		t.Errorf("Drive: %d calls, %d failed, first %v, %d latencies", r.Total, r.Failed, r.FirstErr, len(r.Latencies))
	}
	if r.Rate() <= 0 {
		t.Errorf("Rate %v", r.Rate())
	}
}
