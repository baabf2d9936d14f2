package main

import (
	"errors"
	"testing"

	"github.com/caphub/caphub/registry"
)

// --cache-mb, else $CAPHUB_CACHE_MB, else the registry's default; below 1
// is a usage error.
func TestCacheConfig(t *testing.T) {
	t.Setenv(envCacheMB, "")
	cfg, err := serveConfigOf(t)
	if err != nil || int64(cfg.serve.cacheMB)<<20 != registry.DefaultCacheLimits.Bytes {
		t.Errorf("default: %d MiB, %v; want %d MiB", cfg.serve.cacheMB, err, registry.DefaultCacheLimits.Bytes>>20)
	}
	t.Setenv(envCacheMB, "40")
	if cfg, err = serveConfigOf(t); err != nil || cfg.serve.cacheMB != 40 {
		t.Errorf("$%s=40: %d, %v", envCacheMB, cfg.serve.cacheMB, err)
	}
	if cfg, err = serveConfigOf(t, "--cache-mb", "12"); err != nil || cfg.serve.cacheMB != 12 {
		t.Errorf("--cache-mb 12 over the variable: %d, %v", cfg.serve.cacheMB, err)
	}
	var usage *usageError
	if _, err = serveConfigOf(t, "--cache-mb", "0"); !errors.As(err, &usage) {
		t.Errorf("--cache-mb 0: %v; want a usage error", err)
	}
}
