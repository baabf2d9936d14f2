package builtin

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/caphub/caphub/capability"
)

const (
	a2aDiscover  = "ossa:a2a/discover@1.0"
	a2aNegotiate = "ossa:a2a/negotiate@1.0"
)

// a2aHarness registers the built-ins and two more capabilities (one with
// an intent, one of version 1.2) in a real SQLite registry.
func a2aHarness(t *testing.T) *harness {
	t.Helper()
	svc, _ := registered(t)
	extra := []capability.Definition{
		{URI: "ossa:messaging/send_text@1.2", Name: "send_text", Domain: "messaging", Version: "1.2.0", Title: "Send text",
			Description: "Send a text message to a contact.", Intents: []string{"messaging.send_text"},
			Input: capability.Schema{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string"}}}, Output: capability.Schema{"type": "object"},
			Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "x.send_text"}}},
		{URI: "ossa:forecasting/sales_forecast@2.0", Name: "sales_forecast", Domain: "forecasting", Version: "2.0.0", Title: "Sales forecast",
			Description: "Project next quarter's sales.", Stability: capability.StabilityBeta,
			Input: capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
			Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "x.sales"}}},
	}
	if _, err := svc.RegisterBatch(context.Background(), extra); err != nil {
		t.Fatal(err)
	}
	return newHarness(t, Env{Registry: svc})
}

// found returns the URIs discover returned.
func found(out map[string]any) []string {
	var uris []string
	for _, c := range out["capabilities"].([]any) {
		uris = append(uris, c.(map[string]any)["uri"].(string))
	}
	return uris
}

func TestDiscover(t *testing.T) {
	h := a2aHarness(t)

	// Search "weather": the weather unit capabilities and their bundle.
	out := h.ok(a2aDiscover, "agent", map[string]any{"query": "weather"})
	uris := found(out)
	for _, want := range []string{"ossa:everruns/get_weather@1.0", "ossa:everruns/get_forecast@1.0", "ossa:everruns/test_weather@1.0"} {
		if !slices.Contains(uris, want) {
			t.Errorf("search weather: %v lacks %s", uris, want)
		}
	}
	if len(uris) == 0 || uris[0] != "ossa:everruns/get_weather@1.0" && uris[0] != "ossa:everruns/test_weather@1.0" {
		t.Errorf("search weather ranks %v first; want a capability named or titled for weather", uris)
	}
	if out["total"] != int64(len(uris)) {
		t.Errorf("total %v for %d results", out["total"], len(uris))
	}
	for _, c := range out["capabilities"].([]any) {
		c := c.(map[string]any)
		if c["title"] == nil || c["description"] == "" || c["version"] != "1.0.0" || c["stability"] == nil {
			t.Errorf("result lacks title, description, version or stability: %v", c)
		}
		if c["uri"] == "ossa:everruns/test_weather@1.0" && !reflect.DeepEqual(c["tools"], []any{"ossa:everruns/get_weather@1.0", "ossa:everruns/get_forecast@1.0"}) {
			t.Errorf("the bundle's tools = %v", c["tools"])
		}
	}

	tests := []struct {
		name      string
		in        map[string]any
		want      []string // exact, in order
		wantTotal int64
	}{
		{"domain state lists in URI order", map[string]any{"domain": "state"},
			[]string{"ossa:state/checkpoint@1.0", "ossa:state/delete@1.0", "ossa:state/list@1.0", "ossa:state/read@1.0", "ossa:state/rollback@1.0", "ossa:state/write@1.0"}, 6},
		{"limit cuts, total counts all", map[string]any{"domain": "state", "limit": int64(2)},
			[]string{"ossa:state/checkpoint@1.0", "ossa:state/delete@1.0"}, 6},
		{"intent", map[string]any{"intent": "messaging.send_text"}, []string{"ossa:messaging/send_text@1.2"}, 1},
		{"stability experimental", map[string]any{"stability": "experimental"},
			[]string{"ossa:everruns/file_system@1.0", "ossa:everruns/research@1.0", "ossa:everruns/sandbox@1.0"}, 3},
		{"query and domain", map[string]any{"query": "forecast", "domain": "everruns"}, []string{"ossa:everruns/get_forecast@1.0", "ossa:everruns/test_weather@1.0"}, 2},
		{"query and stability", map[string]any{"query": "forecast", "stability": "beta"}, []string{"ossa:forecasting/sales_forecast@2.0"}, 1},
		{"nothing matches", map[string]any{"query": "quantum teleportation"}, nil, 0},
		{"unknown domain", map[string]any{"domain": "nowhere"}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := h.ok(a2aDiscover, "", tt.in)
			got := found(out)
			if strings.HasPrefix(tt.name, "query") {
				slices.Sort(got) // ranked: compare as sets
				slices.Sort(tt.want)
			}
			if !slices.Equal(got, tt.want) || out["total"] != tt.wantTotal {
				t.Errorf("got %v (total %v), want %v (total %d)", got, out["total"], tt.want, tt.wantTotal)
			}
		})
	}

	// Default limit 10.
	if got := found(h.ok(a2aDiscover, "", map[string]any{})); len(got) != 10 {
		t.Errorf("no filter: %d results, want the default limit 10", len(got))
	}
	// Out of range limits.
	for _, limit := range []int64{0, 101} {
		_, err := h.call(a2aDiscover, "", map[string]any{"limit": limit})
		wantCode(t, err, "INVALID_INPUT", "limit")
	}

	// Without a registry.
	_, err := newHarness(t, Env{}).call(a2aDiscover, "", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "Env.Registry") {
		t.Errorf("err = %v, want one naming Env.Registry", err)
	}
}

func TestNegotiate(t *testing.T) {
	h := a2aHarness(t)
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"built-in, preferred version", map[string]any{"type": "capability_request", "capability": "ossa:everruns/add", "preferred_versions": []any{"1.0"}, "minimum_version": "1.0"},
			map[string]any{"type": "capability_response", "capability": "ossa:everruns/add@1.0", "status": "available"}},
		{"version on the URI", map[string]any{"capability": "ossa:state/checkpoint@1"},
			map[string]any{"type": "capability_response", "capability": "ossa:state/checkpoint@1.0", "status": "available"}},
		{"older minor requested is satisfied by 1.2", map[string]any{"capability": "ossa:messaging/send_text", "preferred_versions": []any{"1.1"}},
			map[string]any{"type": "capability_response", "capability": "ossa:messaging/send_text@1.2", "status": "available"}},
		{"newer major is not compatible", map[string]any{"capability": "ossa:forecasting/sales_forecast", "preferred_versions": []any{"1.0"}, "minimum_version": "1.0"}, nil},
		{"unknown capability", map[string]any{"capability": "ossa:security/scan_vulnerabilities@1.0"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := h.ok(a2aNegotiate, "agent", tt.in)
			if tt.want != nil {
				if !reflect.DeepEqual(out, tt.want) {
					t.Errorf("got %v, want %v", out, tt.want)
				}
				return
			}
			if out["status"] != "unavailable" || out["reason"] == nil || out["type"] != "capability_response" {
				t.Errorf("got %v, want unavailable with a reason", out)
			}
		})
	}
	out := h.ok(a2aNegotiate, "", map[string]any{"capability": "ossa:forecasting/sales_forecast", "preferred_versions": []any{"1.0"}})
	if !reflect.DeepEqual(out["available_versions"], []any{"2.0"}) {
		t.Errorf("available_versions = %v, want [2.0]", out["available_versions"])
	}
	// A malformed URI is answered, not an error (OSSA §7.1 responses carry the reason).
	out = h.ok(a2aNegotiate, "", map[string]any{"capability": "not a uri"})
	if out["status"] != "unavailable" || !strings.Contains(out["reason"].(string), "bad request") {
		t.Errorf("malformed URI: %v", out)
	}
	_, err := h.call(a2aNegotiate, "", map[string]any{"capability": "ossa:x/y", "preferred_versions": []any{1.0}})
	wantCode(t, err, "INVALID_INPUT", "preferred_versions[0]")
	_, err = h.call(a2aNegotiate, "", map[string]any{})
	wantCode(t, err, "INVALID_INPUT", "capability")
}
