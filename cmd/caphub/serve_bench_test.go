package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/identity"
	"github.com/caphub/caphub/internal/auth"
)

// BenchmarkServeGetVersion measures GET of one version through everything
// caphub serve puts in front of the REST handler (tracing, metrics, the
// request guard, the rate limits; with and without token checks), over a
// loopback HTTP connection, client and server in this process: the cost
// bench/registry's get measures from outside, here profilable
// (-cpuprofile).
func BenchmarkServeGetVersion(b *testing.B) {
	for _, enforce := range []bool{false, true} {
		name := "open"
		if enforce {
			name = "token"
		}
		b.Run(name, func(b *testing.B) {
			root := newRootCmd()
			cmd, rest, err := root.Find([]string{"serve"})
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.ParseFlags(append(rest, "--db", filepath.Join(b.TempDir(), "caphub.db"))); err != nil {
				b.Fatal(err)
			}
			cfg, err := configFrom(cmd, slog.LevelWarn)
			if err != nil {
				b.Fatal(err)
			}
			cfg.log = slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx := context.Background()
			a, err := newApp(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			def := capability.Definition{
				URI: "ossa:bench/thing@1.0", Name: "thing", Domain: "bench", Version: "1.0.0",
				Title: "A thing", Description: "Reads a thing.",
				Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
				Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "noop"}},
			}
			if _, err := a.svc.RegisterBatch(identity.With(ctx, identity.Caller{Actor: "bench"}), []capability.Definition{def}); err != nil {
				b.Fatal(err)
			}
			bearer := ""
			if enforce {
				_, secret, err := a.tokens.Create(ctx, "reader", []auth.Scope{auth.ScopeRead}, 0)
				if err != nil {
					b.Fatal(err)
				}
				bearer = "Bearer " + secret
			}
			h := newServeHandler(a, cfg)
			defer h.Close()
			srv := httptest.NewServer(h.chain(a, cfg.serve, enforce))
			defer srv.Close()
			url := srv.URL + "/registry/capabilities/bench/thing@1.0.0"
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
			get := func() {
				req, _ := http.NewRequest("GET", url, nil)
				if bearer != "" {
					req.Header.Set("Authorization", bearer)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET: %s", resp.Status)
				}
			}
			get()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					get()
				}
			})
		})
	}
}
