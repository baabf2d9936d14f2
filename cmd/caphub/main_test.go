package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
)

// TestMain points the user's data directory, where the default database
// lives, at a directory of the test run, for the tests and the binaries
// they start, so no test touches the real one.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "caphub-data")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	testpeers.RemoveBuilt()
	os.Exit(code)
}
