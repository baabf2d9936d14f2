// Package testpeers finds the real peers that tests run against: npm
// packages installed by .ci/run (testdeps/ → .cache/npm), Node, and the
// shared corpus. Each lookup skips the test with a message saying how to get
// the peer when it is missing, so `go test ./...` works anywhere.
package testpeers

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// NPMDir returns the node_modules folder of the test peers: $CAPHUB_NPM_DIR,
// else .cache/npm/node_modules under the module root.
func NPMDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("CAPHUB_NPM_DIR"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(t), ".cache", "npm", "node_modules")
}

// NPMPackage returns the folder of an installed npm package (e.g.
// "@modelcontextprotocol/server-everything"), or skips the test.
func NPMPackage(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(NPMDir(t), filepath.FromSlash(name))
	if _, err := os.Stat(filepath.Join(p, "package.json")); err != nil {
		t.Skipf("npm package %s is not installed at %s: run `bash .ci/run` (or npm ci in .cache/npm with testdeps/package*.json) to install the test peers", name, p)
	}
	return p
}

// Node returns the path of the node binary, or skips the test.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the test needs Node.js to run an npm package")
	}
	return p
}

// Corpus returns a path under ../shared/corpus (beside the module root), or
// skips the test.
func Corpus(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), "..", "shared", "corpus", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus file %s not found (clone the project with ../shared beside it): %v", p, err)
	}
	return p
}
