package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caphub/caphub/internal/fallback"
	"github.com/caphub/caphub/internal/server/mcpgw"
	"github.com/spf13/cobra"
)

// mcpConfig reads the config of `caphub mcp args...`.
func mcpConfig(t *testing.T, args ...string) (config, error) {
	t.Helper()
	root := newRootCmd()
	cmd, rest, err := root.Find(append([]string{"mcp"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	return configFrom(cmd, slog.LevelWarn)
}

// TestConfigSwitches checks the boolean switches read from the
// environment: unset or blank is false, what strconv.ParseBool reads is
// that value, anything else an error naming the variable and the fix.
func TestConfigSwitches(t *testing.T) {
	for _, name := range []string{envAuditSync, "CAPHUB_HUMAN_APPROVAL_REQUIRED"} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				value   string
				want    bool
				wantErr bool
			}{{"", false, false}, {"  ", false, false}, {"true", true, false}, {"1", true, false}, {" TRUE ", true, false},
				{"false", false, false}, {"0", false, false}, {"yes", false, true}, {"ture", false, true}} {
				t.Setenv(name, c.value)
				cfg, err := mcpConfig(t)
				got := cfg.invocation.auditSync
				if name != envAuditSync {
					got = cfg.invocation.humanApproval
				}
				if got != c.want || (err != nil) != c.wantErr {
					t.Errorf("%q: %v, %v; want %v, error %v", c.value, got, err, c.want, c.wantErr)
				}
				if err != nil && (!strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "use true or false")) {
					t.Errorf("%q: error %q does not name the variable and the fix", c.value, err)
				}
			}
		})
	}
}

// TestConfigPrecedence checks that a flag wins over its variable, which
// wins over the default.
func TestConfigPrecedence(t *testing.T) {
	t.Setenv("CAPHUB_DB", "")
	t.Setenv("CAPHUB_ALLOW_HOSTS", "a.example, ,b.example")
	cfg, err := mcpConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(os.Getenv("XDG_DATA_HOME"), "caphub", "caphub.db"); cfg.db != want || cfg.dbGiven {
		t.Errorf("db %q (given %v), want the default %q", cfg.db, cfg.dbGiven, want)
	}
	if got := strings.Join(cfg.invocation.allowHosts, " "); got != "a.example b.example" {
		t.Errorf("allow hosts from the environment: %q", got)
	}
	t.Setenv("CAPHUB_DB", "env.db")
	cfg, err = mcpConfig(t, "--db", "flag.db", "--allow-host", "c.example")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.db != "flag.db" || !cfg.dbGiven {
		t.Errorf("db %q, want the flag's", cfg.db)
	}
	if got := strings.Join(cfg.invocation.allowHosts, " "); got != "c.example" {
		t.Errorf("allow hosts with --allow-host: %q", got)
	}
}

func TestMissingCapabilityFlags(t *testing.T) {
	for i, c := range []struct {
		enabled, auto string
		wantE, wantA  bool
		err           bool
	}{
		{"", "", false, false, false},
		{"true", "", true, false, false},
		{"1", "TRUE", true, true, false},
		{"false", "true", false, true, false},
		{"yes", "", false, false, true},
		{"true", "maybe", false, false, true},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Setenv(fallback.EnvEnabled, c.enabled)
			t.Setenv(fallback.EnvAuto, c.auto)
			e, a, err := missingCapabilityFlags(&cobra.Command{})
			if (err != nil) != c.err || e != c.wantE || a != c.wantA {
				t.Errorf("%q %q: got %v %v %v", c.enabled, c.auto, e, a, err)
			}
		})
	}
}

// TestConfigMCPLargeCatalog checks the large-catalog settings of serve and
// mcp: defaults, variables, flags over variables, and refused values.
func TestConfigMCPLargeCatalog(t *testing.T) {
	for _, v := range []string{envMCPMaxTools, envMCPLargeCatalog, envMCPMaxListBytes} {
		t.Setenv(v, "")
	}
	cfg, err := mcpConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.serve.mcp; m.maxTools != mcpgw.DefaultMaxTools || m.largeCatalog != mcpgw.LargeCatalogSearch || m.maxListBytes != mcpgw.DefaultMaxListBytes {
		t.Errorf("defaults: %+v", m)
	}
	t.Setenv(envMCPMaxTools, "0")
	t.Setenv(envMCPLargeCatalog, "refuse")
	t.Setenv(envMCPMaxListBytes, "65536")
	cfg, err = mcpConfig(t)
	if o := cfg.serve.mcp.options(); err != nil || o.MaxTools != -1 || o.LargeCatalog != mcpgw.LargeCatalogRefuse || o.MaxListBytes != 65536 {
		t.Errorf("from the environment: %+v, %v", o, err)
	}
	cfg, err = mcpConfig(t, "--mcp-max-tools", "50", "--mcp-large-catalog", "search", "--mcp-max-list-bytes", "100000")
	if o := cfg.serve.mcp.options(); err != nil || o.MaxTools != 50 || o.LargeCatalog != mcpgw.LargeCatalogSearch || o.MaxListBytes != 100000 {
		t.Errorf("flags over the environment: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--mcp-max-tools", "-1"}, "", "0 for no limit"},
		{[]string{"--mcp-large-catalog", "drop"}, "", `use "search"`},
		{[]string{"--mcp-max-list-bytes", "100"}, "", "at least 8192"},
		{nil, "lots", envMCPMaxTools + `="lots" is not a whole number`},
	} {
		t.Setenv(envMCPMaxTools, tc.env)
		_, err := mcpConfig(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %s: error %v, want one saying %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestDefaultDatabase checks that without --db or $CAPHUB_DB the registry
// lives in the user's data directory whatever the working directory, that
// caphub mcp says which database it serves, and that a ./caphub.db left in
// the working directory is named with what to do.
func TestDefaultDatabase(t *testing.T) {
	data, cwd := t.TempDir(), t.TempDir()
	env := []string{"XDG_DATA_HOME=" + data, "CAPHUB_DB="}
	if _, errOut, err := runBinary(t, cwd, env, "capability", "register", writeFile(t, "echo.yaml", echoYAML)); err != nil {
		t.Fatalf("register: %v\n%s", err, errOut)
	}
	if _, err := os.Stat(filepath.Join(data, "caphub", "caphub.db")); err != nil {
		t.Fatalf("the default database is not in the data directory: %v", err)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("the working directory holds %v", entries)
	}
	other := t.TempDir()
	out, _, err := runBinary(t, other, env, "capability", "list")
	if err != nil || !strings.Contains(out, "test/echo") {
		t.Fatalf("list from another directory: %v\n%s; want the capability registered from the first", err, out)
	}
	c := exec.Command(caphubBinary(t), "mcp")
	c.Dir, c.Env, c.Stdin = other, append(os.Environ(), env...), strings.NewReader("")
	var errOut strings.Builder
	c.Stderr = &errOut
	if err := c.Run(); err != nil || !strings.Contains(errOut.String(), filepath.Join(data, "caphub", "caphub.db")) {
		t.Errorf("caphub mcp: %v, stderr %q; want it to name the default database", err, errOut.String())
	}
	if err := os.WriteFile(filepath.Join(other, "caphub.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runBinary(t, other, env, "capability", "list"); err != nil || !strings.Contains(errOut, "--db ./caphub.db") {
		t.Errorf("with ./caphub.db present: %v, stderr %q; want a note saying to pass --db ./caphub.db", err, errOut)
	}
}
