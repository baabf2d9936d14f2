package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fileConfig is mcpConfig with the configuration file path applied, as
// the root command's pre-run does.
func fileConfig(t *testing.T, path string, args ...string) (config, error) {
	t.Helper()
	root := newRootCmd()
	cmd, rest, err := root.Find(append([]string{"mcp", "--config", path}, args...))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(append([]string{"--config", path}, rest...)); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(cmd); err != nil {
		return config{}, err
	}
	return configFrom(cmd, slog.LevelWarn)
}

// TestConfigFilePrecedence checks the layers: a flag wins over the
// variable, which wins over the file, which wins over the default; a
// flag-only setting of the file sets its flag; lists and switches too.
func TestConfigFilePrecedence(t *testing.T) {
	for _, env := range []string{"CAPHUB_DB", "CAPHUB_ALLOW_HOSTS", "CAPHUB_MCP_MAX_TOOLS", "CAPHUB_AUDIT_SYNC", envConfigFile} {
		t.Setenv(env, "")
	}
	file := writeFile(t, "caphub.yaml", "# caphub settings\ndb: file.db\nallow-host:\n  - api.example.com\n  - \"*.github.com\"\ntool-mode: search\nmcp-max-tools: 50\naudit-sync: true\n")
	cfg, err := fileConfig(t, file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.db != "file.db" || strings.Join(cfg.invocation.allowHosts, " ") != "api.example.com *.github.com" || cfg.serve.toolMode != "search" || cfg.serve.mcp.maxTools != 50 || !cfg.invocation.auditSync {
		t.Errorf("from the file: db %q, hosts %v, tool mode %q, max tools %d, audit sync %v", cfg.db, cfg.invocation.allowHosts, cfg.serve.toolMode, cfg.serve.mcp.maxTools, cfg.invocation.auditSync)
	}
	t.Setenv("CAPHUB_DB", "env.db")
	t.Setenv("CAPHUB_MCP_MAX_TOOLS", "70")
	cfg, err = fileConfig(t, file, "--tool-mode", "tools", "--allow-host", "flag.example")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.db != "env.db" || cfg.serve.mcp.maxTools != 70 || cfg.serve.toolMode != "tools" || strings.Join(cfg.invocation.allowHosts, " ") != "flag.example" {
		t.Errorf("variables and flags over the file: db %q, max tools %d, tool mode %q, hosts %v", cfg.db, cfg.serve.mcp.maxTools, cfg.serve.toolMode, cfg.invocation.allowHosts)
	}
	cfg, err = fileConfig(t, file, "--db", "flag.db")
	if err != nil || cfg.db != "flag.db" {
		t.Errorf("--db over the variable: %q, %v", cfg.db, err)
	}
}

// TestConfigFileErrors checks that a bad file is refused with its line,
// what is wrong and what to do, before the command does anything.
func TestConfigFileErrors(t *testing.T) {
	for _, c := range []struct{ content, want string }{
		{"db: a.db\ntool-mdoe: search\n", `:2: unknown setting "tool-mdoe" (did you mean tool-mode?)`},
		{"mcp-max-tools: many\n", ":1: mcp-max-tools: give a whole number"},
		{"audit-sync: sometimes\n", ":1: audit-sync: give true or false"},
		{"mcp-session-idle: 10 minutes\n", ":1: mcp-session-idle: give a duration"},
		{"token: chp_secret\n", ":1: token is a secret"},
		{"- db\n", ":1: the configuration file must be a mapping"},
		{"db: a\ndb: b\n", "db"},
		{"allow-host: {a: b}\n", ":1: allow-host: give a list of plain values"},
		{"db: [a\n", "yaml"},
	} {
		file := writeFile(t, "bad.yaml", c.content)
		code, _, errOut := caphub(t, "capability", "list", "--config", file)
		if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, file) {
			t.Errorf("%q: exit %d %q; want a usage error naming %s and %q", c.content, code, errOut, file, c.want)
		}
	}
	if code, _, errOut := caphub(t, "capability", "list", "--config", filepath.Join(t.TempDir(), "none.yaml")); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("a missing file: exit %d %q", code, errOut)
	}
}

// TestConfigShow checks caphub config show: every setting once, with its
// source, a database URL's password and the token never printed; and that
// a command really uses what the file says ($CAPHUB_CONFIG names it).
func TestConfigShow(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "from-file.db")
	if code, _, errOut := caphub(t, "capability", "register", writeFile(t, "echo.yaml", echoYAML), "--db", db); code != 0 {
		t.Fatalf("register: exit %d\n%s", code, errOut)
	}
	file := writeFile(t, "caphub.yaml", "db: "+db+"\nmcp-max-tools: 40\n")
	t.Setenv(envConfigFile, file)
	t.Setenv("CAPHUB_DB", "")
	t.Setenv("CAPHUB_TOKEN", "chp_never_printed")
	t.Setenv("CAPHUB_SERVER", "")
	code, out, errOut := caphub(t, "capability", "list")
	if code != 0 || !strings.Contains(out, "test/echo") {
		t.Fatalf("list with the database the file names: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = caphub(t, "config", "show", "--format", "json")
	if code != 0 {
		t.Fatalf("config show: exit %d\n%s", code, errOut)
	}
	var rows []effectiveSetting
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]effectiveSetting{}
	for _, r := range rows {
		if _, dup := byKey[r.Key]; dup {
			t.Errorf("%s shown twice", r.Key)
		}
		byKey[r.Key] = r
	}
	if len(rows) != len(settings) {
		t.Errorf("%d rows for %d settings", len(rows), len(settings))
	}
	if r := byKey["db"]; r.Value != db || r.Source != "file "+file+":1" {
		t.Errorf("db: %+v; want %s from %s:1", r, db, file)
	}
	if r := byKey["mcp-max-tools"]; r.Value != "40" || !strings.HasSuffix(r.Source, ":2") {
		t.Errorf("mcp-max-tools: %+v", r)
	}
	if r := byKey["token"]; r.Source != "env" || strings.Contains(out, "chp_never_printed") {
		t.Errorf("token: %+v; the value must never be printed", r)
	}
	if r := byKey["addr"]; r.Value != "127.0.0.1:8750" || r.Source != "default" {
		t.Errorf("addr: %+v; want serve's default", r)
	}
	t.Setenv("CAPHUB_DB", "postgres://caphub:s3cret@db.internal/caphub")
	_, out, _ = caphub(t, "config", "show")
	if strings.Contains(out, "s3cret") || !strings.Contains(out, "postgres://caphub:xxxxx@db.internal/caphub") {
		t.Errorf("a database URL's password is shown:\n%s", out)
	}
}

// TestSettingsTable checks that the table of settings matches the
// commands: every key marked as a flag is a flag of some command, and
// every flag whose help names a CAPHUB_ variable is a setting with that
// variable.
func TestSettingsTable(t *testing.T) {
	flags := map[string]string{} // name -> usage
	root := newRootCmd()
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = f.Usage })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = f.Usage })
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	for _, s := range settings {
		if _, ok := flags[s.key]; s.flag && !ok {
			t.Errorf("setting %s is marked as a flag, but no command has --%s", s.key, s.key)
		}
	}
	for name, usage := range flags {
		i := strings.Index(usage, "$CAPHUB_")
		if i < 0 || name == "config" {
			continue
		}
		env := strings.TrimRight(strings.FieldsFunc(usage[i+1:], func(r rune) bool { return r == ' ' || r == ',' || r == ')' || r == ';' })[0], ".")
		s, ok := settingByKey(name)
		if !ok {
			// a command's own option that defaults to a serve setting (audit prune --max-events)
			if st, ok := settingByEnv(env); ok && st.key != name {
				continue
			}
			t.Errorf("--%s reads $%s but is not in the settings table", name, env)
			continue
		}
		if s.env != env && !(name == "token-file") {
			t.Errorf("--%s names $%s in its help; the table says %q", name, env, s.env)
		}
	}
}

// FuzzConfigFile checks that no file makes the reader panic or hang.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []string{"db: a.db\n", "allow-host: [a, b]\n", "- x\n", "a: {b: [c]}\n", "&a [*a]\n", "mcp-max-tools: 1e9\n", ""} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		fc, err := readConfigFile(path)
		if err == nil {
			for k := range fc.values {
				if _, ok := settingByKey(k); !ok {
					t.Fatalf("unknown key %q accepted", k)
				}
			}
		}
	})
}

// TestSettingsDocumented checks that README's configuration table lists
// every setting with its variable.
func TestSettingsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, s := range settings {
		row := "| `" + s.key + "` | "
		if s.env != "" {
			row += "`" + s.env + "`"
		}
		if !strings.Contains(readme, row) {
			t.Errorf("README's configuration table lacks %s", row)
		}
	}
}
