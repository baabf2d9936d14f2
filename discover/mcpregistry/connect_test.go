package mcpregistry

import (
	"reflect"
	"strings"
	"testing"

	"github.com/caphub/caphub/mcpconn"
)

func entryT(t *testing.T, name string) Entry {
	t.Helper()
	doc, err := Read(readFileT(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return doc.Entries[0]
}

// TestConnectPackages: npm, pypi and oci packages become the stdio
// commands that run them, with their arguments, defaults and variables;
// a required secret becomes a reference to caphub's environment, never a
// value.
func TestConnectPackages(t *testing.T) {
	for _, tc := range []struct {
		file   string
		inputs map[string]string
		want   mcpconn.Server
		needs  []string
	}{
		{file: "npm.json", want: mcpconn.Server{Name: "tide-tables", Transport: "stdio", Command: "npx",
			Args: []string{"-y", "--node-options", "--max-old-space-size=256", "@harbor-labs/tide-tables-mcp@2.4.1", "brest", "--units", "metric"},
			Env:  map[string]string{"TIDE_API_KEY": "${TIDE_API_KEY}", "TIDE_REGION": "atlantic"}},
			needs: []string{"TIDE_API_KEY"}},
		{file: "pypi.json", inputs: map[string]string{"--zone": "7b"}, want: mcpconn.Server{Name: "plant-almanac", Transport: "stdio", Command: "uvx",
			Args: []string{"plant-almanac-mcp==0.9.0", "serve", "--zone", "7b"}}},
		{file: "oci.json", inputs: map[string]string{"notes": "/srv/notes"}, want: mcpconn.Server{Name: "slate-search", Transport: "stdio", Command: "docker",
			Args: []string{"run", "-i", "--rm", "-e", "SLATE_LANG", "--mount", "type=bind,src=/srv/notes,dst=/notes,ro", "ghcr.io/quarry/slate-search:1.0.0"},
			Env:  map[string]string{"SLATE_LANG": "en"}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			e := entryT(t, tc.file)
			p := Connect(e, LocalName(e.Server.Name, false), Options{Inputs: tc.inputs})
			if p.Server == nil {
				t.Fatalf("skipped: %s", p.Skipped)
			}
			got := *p.Server
			got.Registry = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("connection\n got %+v\nwant %+v", got, tc.want)
			}
			if string(p.Server.Registry) != string(e.Raw) {
				t.Error("the entry is not kept with the connection")
			}
			var needs []string
			for _, n := range p.Needs {
				needs = append(needs, n.Var)
			}
			if !reflect.DeepEqual(needs, tc.needs) {
				t.Errorf("needs %v, want %v", needs, tc.needs)
			}
		})
	}
}

// TestConnectMustSet: a required input without value or default skips
// the entry, saying what to set.
func TestConnectMustSet(t *testing.T) {
	p := Connect(entryT(t, "pypi.json"), "plant-almanac", Options{})
	if p.Server != nil || !strings.Contains(p.Skipped, "packageArguments[1] --zone has no value (USDA hardiness zone): set it with --set --zone=VALUE") {
		t.Fatalf("got %+v", p)
	}
	p = Connect(entryT(t, "oci.json"), "slate-search", Options{})
	if p.Server != nil || !strings.Contains(p.Skipped, "{notes} has no value (folder of notes): set it with --set notes=VALUE") ||
		!strings.Contains(p.Skipped, "packages[1] (mcpb") || !strings.Contains(p.Skipped, "does not download and unpack MCP bundles") {
		t.Fatalf("got %+v", p)
	}
}

// TestConnectRemote: a remote becomes a URL with its template variables
// and headers; the secret header refers to caphub's environment.
func TestConnectRemote(t *testing.T) {
	p := Connect(entryT(t, "remote.json"), "forecast", Options{Inputs: map[string]string{"region": "us"}})
	want := mcpconn.Server{Name: "forecast", Transport: "http", URL: "https://us.weatherdesk.example.com/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}", "X-Client": "caphub"}}
	if p.Server == nil {
		t.Fatal(p.Skipped)
	}
	got := *p.Server
	got.Registry = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if len(p.Needs) != 1 || p.Needs[0].Var != "API_TOKEN" || !p.Needs[0].Secret || p.From != "remotes[0] (streamable-http https://{region}.weatherdesk.example.com/mcp)" {
		t.Errorf("plan %+v", p)
	}
	// A literal secret is refused; a reference is taken.
	if p := Connect(entryT(t, "remote.json"), "forecast", Options{Inputs: map[string]string{"api_token": "s3cret"}}); p.Server == nil || p.From[:10] != "remotes[1]" {
		t.Errorf("a literal secret: %+v", p)
	}
	if p := Connect(entryT(t, "remote.json"), "forecast", Options{Inputs: map[string]string{"api_token": "${WD_TOKEN}"}}); p.Server == nil || p.Server.Headers["Authorization"] != "Bearer ${WD_TOKEN}" || len(p.Needs) != 1 || p.Needs[0].Var != "WD_TOKEN" {
		t.Errorf("a reference: %+v", p)
	}
}

// TestConnectPrefer: packages come first unless remotes are preferred.
func TestConnectPrefer(t *testing.T) {
	e := entryT(t, "npm.json")
	e.Server.Remotes = []Transport{{Type: TransportSSE, URL: "https://tides.example.org/sse"}}
	if p := Connect(e, "t", Options{}); p.Server.Command != "npx" {
		t.Errorf("default: %+v", p.Server)
	}
	if p := Connect(e, "t", Options{PreferRemote: true}); p.Server.Transport != mcpconn.TransportSSE || p.Server.URL != "https://tides.example.org/sse" {
		t.Errorf("prefer remote: %+v", p.Server)
	}
}

func TestLocalName(t *testing.T) {
	for in, want := range map[string]string{
		"io.github.user/Weather_API": "weather-api",
		"com.example/2fa":            "mcp-2fa",
		"a.b/--x--":                  "x",
	} {
		if got := LocalName(in, false); got != want {
			t.Errorf("LocalName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := LocalName("io.github.user/weather", true); got != "io-github-user-weather" {
		t.Errorf("full: %q", got)
	}
}

// TestConnectOptionalSecret: an optional secret without value is left
// out (the server starts without it), with a note saying how to pass
// caphub's own variable; never a reference that would fail the start.
func TestConnectOptionalSecret(t *testing.T) {
	doc, err := Read([]byte(`{"name": "io.example/ledger", "description": "Ledger queries", "version": "0.3.0",
		"packages": [{"registryType": "oci", "identifier": "ghcr.io/example/ledger", "version": "0.3.0", "transport": {"type": "stdio"},
			"environmentVariables": [{"name": "LEDGER_TOKEN", "isSecret": true}]}],
		"remotes": [{"type": "streamable-http", "url": "https://ledger.example.io/mcp",
			"headers": [{"name": "X-Ledger-Key", "value": "{key}", "variables": {"key": {"isSecret": true}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := Connect(doc.Entries[0], "ledger", Options{})
	if p.Server == nil || len(p.Server.Env) != 0 || strings.Join(p.Server.Args, " ") != "run -i --rm ghcr.io/example/ledger:0.3.0" || len(p.Needs) != 0 ||
		!strings.Contains(strings.Join(p.Notes, "\n"), "env LEDGER_TOKEN: optional secret, left unset (to pass caphub's $LEDGER_TOKEN, import with --set LEDGER_TOKEN='${LEDGER_TOKEN}')") {
		t.Fatalf("package: %+v", p)
	}
	p = Connect(doc.Entries[0], "ledger", Options{PreferRemote: true})
	if p.Server == nil || p.Server.URL != "https://ledger.example.io/mcp" || len(p.Server.Headers) != 0 {
		t.Fatalf("remote: %+v", p)
	}
	p = Connect(doc.Entries[0], "ledger", Options{Inputs: map[string]string{"LEDGER_TOKEN": "${MY_LEDGER}"}})
	if p.Server.Env["LEDGER_TOKEN"] != "${MY_LEDGER}" || len(p.Needs) != 1 || p.Needs[0].Var != "MY_LEDGER" || strings.Join(p.Server.Args, " ") != "run -i --rm -e LEDGER_TOKEN ghcr.io/example/ledger:0.3.0" {
		t.Fatalf("given: %+v", p.Server)
	}
}
