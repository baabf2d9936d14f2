package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/invoke"
)

func TestBundles(t *testing.T) {
	h := newHarness(t, Env{})
	if out := h.ok("ossa:everruns/noop@1.0", "", map[string]any{}); len(out) != 0 {
		t.Errorf("noop = %v, want {}", out)
	}
	out := h.ok("ossa:everruns/test_weather@1.0", "", map[string]any{})
	if out["system_prompt_addition"] != "You have access to weather tools. Use get_weather for current conditions and get_forecast for multi-day forecasts." {
		t.Errorf("test_weather system_prompt_addition = %v", out["system_prompt_addition"])
	}
	if !reflect.DeepEqual(out["tools"], []any{"ossa:everruns/get_weather@1.0", "ossa:everruns/get_forecast@1.0"}) {
		t.Errorf("test_weather tools = %v", out["tools"])
	}
	out = h.ok("ossa:everruns/current_time@1.0", "", map[string]any{})
	if _, has := out["system_prompt_addition"]; has {
		t.Errorf("current_time has no system-prompt addition, got %v", out)
	}
	for _, id := range []string{"research", "sandbox", "file_system"} {
		_, err := h.call("ossa:everruns/"+id+"@1.0", "", map[string]any{})
		wantCode(t, err, "COMING_SOON", id, "coming soon")
	}
}

func TestCurrentTime(t *testing.T) {
	const uri = "ossa:everruns/get_current_time@1.0"
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name       string
		now        string // UTC
		tz, format string // "" leaves the field out
		wantTime   string
		wantZone   string
		wantOffset string
	}{
		{"default is UTC iso8601", "2026-01-15T17:30:00Z", "", "", "2026-01-15T17:30:00Z", "UTC", "+00:00"},
		// America/New_York springs forward at 2026-03-08 07:00 UTC (02:00 EST → 03:00 EDT).
		{"new york before DST", "2026-03-08T06:59:59Z", "America/New_York", "iso8601", "2026-03-08T01:59:59-05:00", "America/New_York", "-05:00"},
		{"new york after DST", "2026-03-08T07:00:00Z", "America/New_York", "iso8601", "2026-03-08T03:00:00-04:00", "America/New_York", "-04:00"},
		{"new york human EDT", "2026-07-04T16:00:00Z", "America/New_York", "human", "Saturday, July 4, 2026 at 12:00:00 EDT", "America/New_York", "-04:00"},
		// Europe/Berlin springs forward at 2026-03-29 01:00 UTC and falls back at 2026-10-25 01:00 UTC.
		{"berlin before spring DST", "2026-03-29T00:59:00Z", "Europe/Berlin", "human", "Sunday, March 29, 2026 at 01:59:00 CET", "Europe/Berlin", "+01:00"},
		{"berlin after spring DST", "2026-03-29T01:00:00Z", "Europe/Berlin", "human", "Sunday, March 29, 2026 at 03:00:00 CEST", "Europe/Berlin", "+02:00"},
		{"berlin before autumn DST", "2026-10-25T00:30:00Z", "Europe/Berlin", "iso8601", "2026-10-25T02:30:00+02:00", "Europe/Berlin", "+02:00"},
		{"berlin after autumn DST", "2026-10-25T01:30:00Z", "Europe/Berlin", "iso8601", "2026-10-25T02:30:00+01:00", "Europe/Berlin", "+01:00"},
		{"kolkata half-hour offset", "2026-01-15T17:30:00Z", "Asia/Kolkata", "iso8601", "2026-01-15T23:00:00+05:30", "Asia/Kolkata", "+05:30"},
		{"kolkata human", "2026-01-15T17:30:00Z", "Asia/Kolkata", "human", "Thursday, January 15, 2026 at 23:00:00 IST", "Asia/Kolkata", "+05:30"},
		{"unix is zone-independent", "2026-01-15T17:30:00Z", "Asia/Kolkata", "unix", "1768498200", "Asia/Kolkata", "+05:30"},
		{"unix UTC", "1970-01-01T00:00:10Z", "UTC", "unix", "10", "UTC", "+00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(tt.now)
			h := newHarness(t, Env{Now: fixedClock(now)})
			in := map[string]any{}
			if tt.tz != "" {
				in["timezone"] = tt.tz
			}
			if tt.format != "" {
				in["format"] = tt.format
			}
			out := h.ok(uri, "", in)
			wantFormat := tt.format
			if wantFormat == "" {
				wantFormat = "iso8601"
			}
			want := map[string]any{"time": tt.wantTime, "timezone": tt.wantZone, "format": wantFormat, "unix": now.Unix(), "utc_offset": tt.wantOffset}
			if !reflect.DeepEqual(out, want) {
				t.Errorf("got  %v\nwant %v", out, want)
			}
			if wantFormat == "iso8601" {
				back, err := time.Parse(time.RFC3339, out["time"].(string))
				if err != nil || !back.Equal(now) {
					t.Errorf("iso8601 %v does not parse back to %v (%v)", out["time"], now, err)
				}
			}
		})
	}
}

func TestCurrentTimeErrors(t *testing.T) {
	const uri = "ossa:everruns/get_current_time@1.0"
	h := newHarness(t, Env{Now: fixedClock(exampleNow)})
	for _, tz := range []string{"Mars/Olympus_Mons", "Local", "America/New_York/../../etc/passwd", "EST5EDT_nope"} {
		_, err := h.call(uri, "", map[string]any{"timezone": tz})
		ie := wantCode(t, err, "INVALID_TIMEZONE", fmt.Sprintf("%q", tz), "America/New_York")
		if ie.Retryable {
			t.Errorf("INVALID_TIMEZONE for %q is retryable", tz)
		}
	}
	_, err := h.call(uri, "", map[string]any{"format": "rfc822"})
	wantCode(t, err, invoke.CodeInvalidInput, "rfc822")
	_, err = h.call(uri, "", map[string]any{"timezone": 5})
	wantCode(t, err, invoke.CodeInvalidInput, "timezone")
}

func TestMath(t *testing.T) {
	h := newHarness(t, Env{})
	tests := []struct {
		op   string
		a, b any
		want float64
	}{
		{"add", 2.0, 3.0, 5},
		{"add", 0.1, 0.2, 0.30000000000000004}, // float64 arithmetic, not decimal
		{"add", int64(-7), json.Number("2.5"), -4.5},
		{"subtract", 10.0, 4.0, 6},
		{"subtract", 4.0, 10.0, -6},
		{"subtract", 1.5, 0.25, 1.25},
		{"multiply", 6.0, 7.0, 42},
		{"multiply", -2.5, 4.0, -10},
		{"multiply", 1e-200, 1e-200, 0}, // underflow is a valid result
		{"divide", 7.0, 2.0, 3.5},
		{"divide", 1.0, 3.0, 1.0 / 3.0},
		{"divide", int64(-9), int64(4), -2.25},
		{"divide", 0.0, 5.0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s(%v,%v)", tt.op, tt.a, tt.b), func(t *testing.T) {
			h := h.in(t)
			out, err := h.call("ossa:everruns/"+tt.op+"@1.0", "", map[string]any{"a": tt.a, "b": tt.b})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.(map[string]any)["result"]; got != tt.want {
				t.Errorf("result = %v (%T), want %v", got, got, tt.want)
			}
		})
	}
}

func TestMathErrors(t *testing.T) {
	h := newHarness(t, Env{})
	tests := []struct {
		op      string
		in      map[string]any
		code    string
		mention []string
	}{
		{"divide", map[string]any{"a": 10.0, "b": 0.0}, "DIVISION_BY_ZERO", []string{"zero", "divisor"}},
		{"divide", map[string]any{"a": 0.0, "b": int64(0)}, "DIVISION_BY_ZERO", nil},
		{"divide", map[string]any{"a": 1.0, "b": json.Number("-0")}, "DIVISION_BY_ZERO", nil},
		{"multiply", map[string]any{"a": 1e308, "b": 10.0}, "RESULT_OUT_OF_RANGE", []string{"multiply"}},
		{"add", map[string]any{"a": 1.7e308, "b": 1.7e308}, "RESULT_OUT_OF_RANGE", nil},
		{"divide", map[string]any{"a": 1e308, "b": 1e-10}, "RESULT_OUT_OF_RANGE", nil},
		{"add", map[string]any{"b": 1.0}, invoke.CodeInvalidInput, []string{`"a"`}},
		{"add", map[string]any{"a": "1", "b": 1.0}, invoke.CodeInvalidInput, []string{`"a"`, "string"}},
		{"subtract", map[string]any{"a": 1.0, "b": nil}, invoke.CodeInvalidInput, []string{`"b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			h := h.in(t)
			_, err := h.call("ossa:everruns/"+tt.op+"@1.0", "", tt.in)
			ie := wantCode(t, err, tt.code, tt.mention...)
			if ie.Retryable {
				t.Errorf("%s %v: retryable", tt.op, tt.in)
			}
		})
	}
}

func TestWeatherDeterministic(t *testing.T) {
	const uri = "ossa:everruns/get_weather@1.0"
	h := newHarness(t, Env{})
	cities := []string{"Paris", "New York", "Tokyo", "Kyiv", "São Paulo", "Reykjavík", "x"}
	seen := map[string]string{}
	for _, city := range cities {
		a := h.ok(uri, "", map[string]any{"city": city})
		b := h.ok(uri, "", map[string]any{"city": city})
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two calls differ: %v / %v", city, a, b)
		}
		// Case and spacing do not change the data.
		c := h.ok(uri, "", map[string]any{"city": "  " + strings.ToUpper(city) + " "})
		c["city"] = city
		if !reflect.DeepEqual(a, c) {
			t.Errorf("%s: upper-cased and padded gives other data: %v / %v", city, a, c)
		}
		if a["city"] != city || a["simulated"] != true {
			t.Errorf("%s: %v", city, a)
		}
		tc, tf := a["temperature_c"].(float64), a["temperature_f"].(float64)
		if tc < -10 || tc >= 38 || math.Abs(tf-(tc*9/5+32)) > 0.05+1e-9 {
			t.Errorf("%s: temperatures %v °C / %v °F out of range or inconsistent", city, tc, tf)
		}
		if hum := a["humidity"].(int64); hum < 25 || hum > 94 {
			t.Errorf("%s: humidity %d", city, hum)
		}
		delete(a, "city")
		key := fmt.Sprint(a)
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s have identical weather: the hash is not spreading", city, other)
		}
		seen[key] = city
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", 201)} {
		_, err := h.call(uri, "", map[string]any{"city": bad})
		wantCode(t, err, "INVALID_CITY")
	}
}

func TestForecast(t *testing.T) {
	const uri = "ossa:everruns/get_forecast@1.0"
	now := time.Date(2026, 12, 30, 23, 59, 0, 0, time.FixedZone("x", -5*3600)) // 2026-12-31 in UTC
	h := newHarness(t, Env{Now: fixedClock(now)})
	tests := []struct {
		name        string
		days        any // nil leaves it out
		wantDays    int64
		wantClamped bool
	}{
		{"default", nil, 3, false},
		{"one", int64(1), 1, false},
		{"seven", int64(7), 7, false},
		{"eight is clamped", int64(8), 7, true},
		{"thirty is clamped", 30.0, 7, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := h.in(t)
			in := map[string]any{"city": "Lisbon"}
			if tt.days != nil {
				in["days"] = tt.days
			}
			out := h.ok(uri, "", in)
			if out["days"] != tt.wantDays || out["clamped"] != tt.wantClamped {
				t.Errorf("days %v clamped %v, want %d %v", out["days"], out["clamped"], tt.wantDays, tt.wantClamped)
			}
			requested, _ := toFloat(tt.days)
			if tt.days == nil {
				requested = 3
			}
			if out["requested_days"] != int64(requested) {
				t.Errorf("requested_days = %v, want %v", out["requested_days"], requested)
			}
			note, hasNote := out["note"].(string)
			if hasNote != tt.wantClamped || tt.wantClamped && !strings.Contains(note, fmt.Sprint(int64(requested))) {
				t.Errorf("note = %q (present %v), want one naming %v only when clamped", note, hasNote, requested)
			}
			list := out["forecast"].([]any)
			if int64(len(list)) != tt.wantDays {
				t.Fatalf("%d forecast days, want %d", len(list), tt.wantDays)
			}
			for i, d := range list {
				day := d.(map[string]any)
				if want := time.Date(2026, 12, 31+i, 0, 0, 0, 0, time.UTC).Format("2006-01-02"); day["date"] != want {
					t.Errorf("day %d date %v, want %s (UTC days from today)", i, day["date"], want)
				}
				if day["low_c"].(float64) > day["high_c"].(float64) {
					t.Errorf("day %d: low %v above high %v", i, day["low_c"], day["high_c"])
				}
			}
			// The same city gives the same forecast, and a longer one starts
			// with the shorter.
			again := h.ok(uri, "", in)
			if !reflect.DeepEqual(out, again) {
				t.Errorf("two calls differ")
			}
			week := h.ok(uri, "", map[string]any{"city": "lisbon", "days": int64(7)})["forecast"].([]any)
			if !reflect.DeepEqual(list, week[:len(list)]) {
				t.Errorf("the %d-day forecast is not the start of the 7-day one", len(list))
			}
		})
	}
	for _, days := range []any{int64(0), int64(-2)} {
		_, err := h.call(uri, "", map[string]any{"city": "Lisbon", "days": days})
		wantCode(t, err, "INVALID_DAYS", fmt.Sprint(days))
	}
	_, err := h.call(uri, "", map[string]any{"city": "Lisbon", "days": 2.5})
	wantCode(t, err, invoke.CodeInvalidInput, "integer")
	_, err = h.call(uri, "", map[string]any{"days": int64(2)})
	wantCode(t, err, "INVALID_CITY")
}

// BenchmarkMathAdd measures the add handler alone.
func BenchmarkMathAdd(b *testing.B) {
	add := Handlers(Env{})["everruns.add"]
	ctx := context.Background()
	call := &invoke.Call{URI: "ossa:everruns/add@1.0", Input: map[string]any{"a": 1.5, "b": int64(2)}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := add(ctx, call)
		if err != nil || out.(map[string]any)["result"] != 3.5 {
			b.Fatal(out, err)
		}
	}
}

// TestWeatherGolden pins the fake data: an agent (or a test suite built on
// caphub) may rely on a city's weather staying the same across releases.
// Changing the generator changes this data, and must come with a new
// version of the capabilities.
func TestWeatherGolden(t *testing.T) {
	h := newHarness(t, Env{Now: fixedClock(exampleNow)})
	weather, _ := json.Marshal(h.ok("ossa:everruns/get_weather@1.0", "", map[string]any{"city": "Paris"}))
	if want := `{"city":"Paris","conditions":"foggy","humidity":44,"simulated":true,"temperature_c":8.6,"temperature_f":47.5,"wind_kph":10}`; string(weather) != want {
		t.Errorf("Paris weather\n got %s\nwant %s", weather, want)
	}
	forecast, _ := json.Marshal(h.ok("ossa:everruns/get_forecast@1.0", "", map[string]any{"city": "Oslo", "days": int64(2)}))
	if want := `{"city":"Oslo","clamped":false,"days":2,"forecast":[{"conditions":"windy","date":"2026-01-15","high_c":35.7,"low_c":25.9,"precipitation_chance":58},{"conditions":"partly cloudy","date":"2026-01-16","high_c":-0.4,"low_c":-7.3,"precipitation_chance":24}],"requested_days":2,"simulated":true}`; string(forecast) != want {
		t.Errorf("Oslo forecast\n got %s\nwant %s", forecast, want)
	}
}
