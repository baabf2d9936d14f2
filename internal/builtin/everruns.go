package builtin

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the IANA time zone database, so that get_current_time works on machines without one

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
)

// The everruns built-ins live in the domain "everruns" (everrunsDomain).
// Each everruns capability is a bundle, ossa:everruns/<id>@1.0, whose Tools
// list the URIs of its unit capabilities, one per everruns tool,
// ossa:everruns/<tool>@1.0 (e.g. ossa:everruns/add@1.0). Titles,
// descriptions, icons, categories and system-prompt additions are the
// everruns ones (the seed's, and everruns' own source where the seed says
// nothing: the titles of noop, test_math and test_weather, the descriptions
// of noop, test_math and test_weather, and noop's icon "circle-off" and
// category "Testing"). Status "available" is stability stable; the
// "coming soon" research, sandbox and file_system are experimental bundles
// without tools, kept so that agents composed from everruns capability ids
// find all seven and are told which are not ready.
//
// Invoking an available bundle returns what enabling it gives an agent: its
// system-prompt addition and its tool URIs; invoking noop returns {}. The
// available bundles declare no error codes, since their invocation cannot
// fail (capability.Validate warns about it, OSSA-12.2.2, and that is the only
// warning the built-ins get). Invoking a coming-soon bundle fails with its
// declared COMING_SOON.

// everrunsDomain is the domain of the everruns built-ins.
const everrunsDomain = "everruns"

// everruns statuses (everruns CapabilityStatus).
const (
	everrunsAvailable  = "available"
	everrunsComingSoon = "coming_soon"
)

// bundle is one everruns capability.
type bundle struct {
	id, title, description string
	status                 string
	prompt                 string
	icon, category         string
	tools                  []string // unit capability names
	keywords               []string
}

func everrunsBundles() []bundle {
	return []bundle{
		{id: "noop", title: "No-Op", status: everrunsAvailable, icon: "circle-off", category: "Testing",
			description: "A no-operation capability for testing and demonstration purposes. Does not add any functionality.",
			keywords:    []string{"everruns", "noop", "test"}},
		{id: "current_time", title: "Current Time", status: everrunsAvailable, icon: "clock", category: "Utilities",
			description: "Tool to get current date and time in various formats and timezones.",
			tools:       []string{"get_current_time"}, keywords: []string{"everruns", "time", "date", "clock", "timezone"}},
		{id: "test_math", title: "Test Math", status: everrunsAvailable, icon: "calculator", category: "Testing",
			description: "Testing capability: adds calculator tools (add, subtract, multiply, divide) for tool calling tests.",
			prompt:      "You have access to math tools. Use them for calculations: add, subtract, multiply, divide.",
			tools:       []string{"add", "subtract", "multiply", "divide"}, keywords: []string{"everruns", "math", "calculator", "test"}},
		{id: "test_weather", title: "Test Weather", status: everrunsAvailable, icon: "cloud-sun", category: "Testing",
			description: "Testing capability: adds mock weather tools (get_weather, get_forecast) for tool calling tests.",
			prompt:      "You have access to weather tools. Use get_weather for current conditions and get_forecast for multi-day forecasts.",
			tools:       []string{"get_weather", "get_forecast"}, keywords: []string{"everruns", "weather", "forecast", "test"}},
		{id: "research", title: "Research", status: everrunsComingSoon, icon: "search", category: "AI",
			description: "Deep research capability with organized scratchpad.",
			prompt:      "You have access to a research scratchpad. Use it to organize your thoughts and findings.",
			keywords:    []string{"everruns", "research", "scratchpad"}},
		{id: "sandbox", title: "Sandbox", status: everrunsComingSoon, icon: "box", category: "Execution",
			description: "Sandboxed code execution environment.",
			prompt:      "You can execute code in a sandboxed environment. Use the execute_code tool to run code safely.",
			keywords:    []string{"everruns", "sandbox", "code", "execution"}},
		{id: "file_system", title: "File System", status: everrunsComingSoon, icon: "folder", category: "File Operations",
			description: "File system access tools.",
			prompt:      "You have access to file system tools. You can read, write, and search files.",
			keywords:    []string{"everruns", "files", "filesystem"}},
	}
}

func everrunsEntries() []entry {
	var out []entry
	for _, b := range everrunsBundles() {
		out = append(out, bundleEntry(b))
	}
	out = append(out, currentTimeEntry())
	out = append(out, mathEntries()...)
	out = append(out, weatherEntries()...)
	return out
}

// bundleEntry is the definition and handler of one everruns capability.
func bundleEntry(b bundle) entry {
	d := capability.Definition{
		Domain:               everrunsDomain,
		Name:                 b.id,
		Title:                b.title,
		Description:          b.description,
		Display:              &capability.Display{Icon: b.icon, Category: b.category},
		SystemPromptAddition: b.prompt,
		Keywords:             b.keywords,
		Input:                object(true, map[string]any{}),
		Effects:              []string{"read_only", "idempotent"},
	}
	if b.status == everrunsComingSoon {
		d.Stability = capability.StabilityExperimental
		d.Description += " Coming soon in everruns: the bundle has no tools yet."
	}
	for _, t := range b.tools {
		d.Tools = append(d.Tools, uriOf(everrunsDomain, t))
	}
	if b.id == "noop" {
		d.Description += " Invoking it returns {}."
		d.Output = map[string]any{"type": "object", "description": "Always {}.", "properties": map[string]any{}, "additionalProperties": false}
		d.Examples = []capability.Example{{Description: "noop does nothing", Input: map[string]any{}, Output: map[string]any{}}}
		return entry{def: define(d), handler: func(*env) Handler {
			return func(context.Context, *invoke.Call) (any, error) { return map[string]any{}, nil }
		}}
	}
	d.Output = object(false, map[string]any{
		"system_prompt_addition": prop("string", "Text to add to the agent's system prompt when the capability is enabled; absent when there is none."),
		"tools":                  prop("array", "URIs of the unit capabilities (tools) the capability provides.", "items", map[string]any{"type": "string"}),
	}, "tools")
	if b.status == everrunsComingSoon {
		d.Errors = []capability.ErrorDef{errDef("COMING_SOON", false, "The everruns capability is not implemented yet, so it cannot be enabled or invoked.")}
		return entry{def: define(d), handler: func(*env) Handler {
			return func(context.Context, *invoke.Call) (any, error) {
				return nil, invoke.Errorf("COMING_SOON", false, "everruns capability %q (%s) is coming soon and has no tools yet: leave it out of the agent's capabilities", b.id, b.title)
			}
		}}
	}
	d.Examples = []capability.Example{{Description: "what enabling " + b.id + " gives an agent", Input: map[string]any{}, Output: bundleOutput(b)}}
	return entry{def: define(d), handler: func(*env) Handler {
		return func(context.Context, *invoke.Call) (any, error) { return bundleOutput(b), nil }
	}}
}

// bundleOutput is what invoking a bundle returns.
func bundleOutput(b bundle) map[string]any {
	tools := make([]any, len(b.tools))
	for i, t := range b.tools {
		tools[i] = uriOf(everrunsDomain, t)
	}
	out := map[string]any{"tools": tools}
	if b.prompt != "" {
		out["system_prompt_addition"] = b.prompt
	}
	return out
}

// ---- current_time ----------------------------------------------------------

// Time formats of get_current_time.
const (
	formatISO8601 = "iso8601"
	formatUnix    = "unix"
	formatHuman   = "human"
)

// humanLayout renders a time as everruns' human format does, with the
// zone's abbreviation: "Thursday, January 15, 2026 at 12:30:00 EST".
const humanLayout = "Monday, January 2, 2006 at 15:04:05 MST"

func currentTimeEntry() entry {
	d := capability.Definition{
		Domain:      everrunsDomain,
		Name:        "get_current_time",
		Title:       "Get current time",
		Description: "Get the current date and time in an IANA time zone (e.g. UTC, America/New_York, Asia/Kolkata), as ISO 8601, a Unix timestamp or human-readable text. The zone's daylight-saving rules apply.",
		Keywords:    []string{"time", "date", "clock", "timezone", "now"},
		Input: object(true, map[string]any{
			"timezone": prop("string", "IANA time zone name, case-sensitive (e.g. UTC, America/New_York, Europe/Berlin, Asia/Kolkata). Defaults to UTC.", "default", "UTC", "minLength", int64(1)),
			"format":   prop("string", "iso8601 (RFC 3339 with the zone's offset), unix (seconds since 1970-01-01 UTC) or human (e.g. \"Thursday, January 15, 2026 at 12:30:00 EST\"). Defaults to iso8601.", "enum", anyStrings(formatISO8601, formatUnix, formatHuman), "default", formatISO8601),
		}),
		Output: object(false, map[string]any{
			"time":       prop("string", "The current time in the requested format (for unix, the timestamp as decimal text)."),
			"timezone":   prop("string", "The IANA zone the time is given in."),
			"format":     prop("string", "The format of time.", "enum", anyStrings(formatISO8601, formatUnix, formatHuman)),
			"unix":       prop("integer", "Seconds since 1970-01-01T00:00:00Z, whatever the format."),
			"utc_offset": prop("string", "The zone's offset from UTC at that instant, as ±HH:MM (daylight saving included)."),
		}, "time", "timezone", "format", "unix", "utc_offset"),
		Errors: []capability.ErrorDef{
			errDef("INVALID_TIMEZONE", false, "The timezone is not an IANA time zone name (names are case-sensitive, e.g. America/New_York); the message names it."),
		},
		Effects: []string{"read_only"},
		Examples: []capability.Example{
			{Description: "New York in winter (EST), at 2026-01-15T17:30:00Z", Input: map[string]any{"timezone": "America/New_York", "format": "iso8601"},
				Output: map[string]any{"time": "2026-01-15T12:30:00-05:00", "timezone": "America/New_York", "format": "iso8601", "unix": int64(1768498200), "utc_offset": "-05:00"}},
			{Description: "Kolkata, human-readable, at 2026-01-15T17:30:00Z", Input: map[string]any{"timezone": "Asia/Kolkata", "format": "human"},
				Output: map[string]any{"time": "Thursday, January 15, 2026 at 23:00:00 IST", "timezone": "Asia/Kolkata", "format": "human", "unix": int64(1768498200), "utc_offset": "+05:30"}},
			{Description: "a Unix timestamp, at 2026-01-15T17:30:00Z", Input: map[string]any{"format": "unix"},
				Output: map[string]any{"time": "1768498200", "timezone": "UTC", "format": "unix", "unix": int64(1768498200), "utc_offset": "+00:00"}},
		},
	}
	return entry{def: define(d), handler: func(e *env) Handler {
		return func(_ context.Context, call *invoke.Call) (any, error) {
			in := inputOf(call)
			tz, ok, err := stringField(in, "timezone")
			if err != nil {
				return nil, err
			}
			if !ok {
				tz = "UTC"
			}
			format, ok, err := stringField(in, "format")
			if err != nil {
				return nil, err
			}
			if !ok {
				format = formatISO8601
			}
			return currentTime(e.Now(), tz, format)
		}
	}}
}

// currentTime renders now in zone tz and format.
func currentTime(now time.Time, tz, format string) (map[string]any, error) {
	loc, err := loadZone(tz)
	if err != nil {
		return nil, err
	}
	t := now.In(loc)
	var text string
	switch format {
	case formatISO8601:
		text = t.Format(time.RFC3339)
	case formatUnix:
		text = strconv.FormatInt(t.Unix(), 10)
	case formatHuman:
		text = t.Format(humanLayout)
	default:
		return nil, invalidInput("format %q is not a time format: use iso8601, unix or human", format)
	}
	return map[string]any{
		"time":       text,
		"timezone":   loc.String(),
		"format":     format,
		"unix":       t.Unix(),
		"utc_offset": t.Format("-07:00"),
	}, nil
}

// loadZone loads an IANA zone from the embedded database (time/tzdata) or
// the system's. "Local" is refused: it is the server's zone, which an agent
// cannot know and should not depend on.
func loadZone(tz string) (*time.Location, error) {
	const hint = `use an IANA time zone name such as "UTC", "America/New_York", "Europe/Berlin" or "Asia/Kolkata" (names are case-sensitive)`
	if tz == "" || tz == "Local" {
		return nil, invoke.Errorf("INVALID_TIMEZONE", false, "time zone %q is not an IANA time zone: %s", tz, hint)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, invoke.Errorf("INVALID_TIMEZONE", false, "unknown time zone %q: %s", tz, hint)
	}
	return loc, nil
}

// ---- test_math -------------------------------------------------------------

// mathOp is one calculator tool.
type mathOp struct {
	name, title, description string
	a, b                     string // descriptions of the operands
	fn                       func(a, b float64) float64
	example                  [3]float64 // a, b, result
}

func mathOps() []mathOp {
	return []mathOp{
		{name: "add", title: "Add", description: "Add two numbers together and return the result.",
			a: "The first number.", b: "The second number.", fn: func(a, b float64) float64 { return a + b }, example: [3]float64{2, 3, 5}},
		{name: "subtract", title: "Subtract", description: "Subtract the second number from the first and return the result.",
			a: "The number to subtract from.", b: "The number to subtract.", fn: func(a, b float64) float64 { return a - b }, example: [3]float64{10, 4, 6}},
		{name: "multiply", title: "Multiply", description: "Multiply two numbers together and return the result.",
			a: "The first number.", b: "The second number.", fn: func(a, b float64) float64 { return a * b }, example: [3]float64{6, 7, 42}},
		{name: "divide", title: "Divide", description: "Divide the first number by the second and return the result. Dividing by zero is an error (DIVISION_BY_ZERO).",
			a: "The dividend (the number to be divided).", b: "The divisor (the number to divide by); must not be zero.", fn: func(a, b float64) float64 { return a / b }, example: [3]float64{7, 2, 3.5}},
	}
}

func mathEntries() []entry {
	var out []entry
	for _, op := range mathOps() {
		errs := []capability.ErrorDef{
			errDef("RESULT_OUT_OF_RANGE", false, "The result is too large to represent as a 64-bit floating-point number."),
		}
		if op.name == "divide" {
			errs = append([]capability.ErrorDef{errDef("DIVISION_BY_ZERO", false, "The divisor b is zero; give a non-zero divisor.")}, errs...)
		}
		d := capability.Definition{
			Domain:      everrunsDomain,
			Name:        op.name,
			Title:       op.title,
			Description: op.description + " Numbers are 64-bit floating point.",
			Keywords:    []string{"math", "calculator", "arithmetic"},
			Input: object(true, map[string]any{
				"a": prop("number", op.a),
				"b": prop("number", op.b),
			}, "a", "b"),
			Output: object(false, map[string]any{
				"result": prop("number", "The result."),
			}, "result"),
			Errors:  errs,
			Effects: []string{"read_only", "idempotent"},
			Examples: []capability.Example{{
				Input:  map[string]any{"a": op.example[0], "b": op.example[1]},
				Output: map[string]any{"result": op.example[2]},
			}},
		}
		out = append(out, entry{def: define(d), handler: func(*env) Handler { return mathHandler(op) }})
	}
	return out
}

// mathHandler returns the handler of one calculator tool.
func mathHandler(op mathOp) Handler {
	return func(_ context.Context, call *invoke.Call) (any, error) {
		in := inputOf(call)
		a, err := numberField(in, "a")
		if err != nil {
			return nil, err
		}
		b, err := numberField(in, "b")
		if err != nil {
			return nil, err
		}
		if op.name == "divide" && b == 0 {
			return nil, invoke.Errorf("DIVISION_BY_ZERO", false, "cannot divide %v by zero: give a non-zero divisor b", a)
		}
		r := op.fn(a, b)
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return nil, invoke.Errorf("RESULT_OUT_OF_RANGE", false, "%s(%v, %v) is beyond the range of a 64-bit floating-point number (about ±1.8e308)", op.name, a, b)
		}
		return map[string]any{"result": r}, nil
	}
}

// ---- test_weather ----------------------------------------------------------

// Forecast limits of get_forecast.
const (
	forecastDefaultDays = 3
	forecastMaxDays     = 7
	cityMaxLength       = 200
)

// weatherConditions are the conditions fake weather picks from; "snowy"
// replaces rainy and stormy at or below 0 °C.
var weatherConditions = []string{"sunny", "partly cloudy", "cloudy", "rainy", "windy", "foggy", "stormy"}

func weatherEntries() []entry {
	conditions := prop("string", "Sky and precipitation.", "enum", anyStrings(append(append([]string{}, weatherConditions...), "snowy")...))
	city := prop("string", "The city name, e.g. Paris or New York. The data depends only on the name (case and surrounding spaces ignored).", "minLength", int64(1), "maxLength", int64(cityMaxLength))
	cityErr := errDef("INVALID_CITY", false, "The city name is blank or longer than 200 characters.")

	weather := capability.Definition{
		Domain:      everrunsDomain,
		Name:        "get_weather",
		Title:       "Get weather",
		Description: "Get the current weather for a city: temperature, conditions, humidity and wind. Mock data for testing tool calling: deterministic, derived from the city name, the same for every call.",
		Keywords:    []string{"weather", "temperature", "conditions", "mock"},
		Input:       object(true, map[string]any{"city": city}, "city"),
		Output: object(false, map[string]any{
			"city":          prop("string", "The city, as given (trimmed)."),
			"temperature_c": prop("number", "Temperature in °C, one decimal."),
			"temperature_f": prop("number", "Temperature in °F, one decimal."),
			"conditions":    conditions,
			"humidity":      prop("integer", "Relative humidity in percent.", "minimum", int64(0), "maximum", int64(100)),
			"wind_kph":      prop("integer", "Wind speed in km/h.", "minimum", int64(0)),
			"simulated":     prop("boolean", "Always true: the data is fake."),
		}, "city", "temperature_c", "temperature_f", "conditions", "humidity", "wind_kph", "simulated"),
		Errors:   []capability.ErrorDef{cityErr},
		Effects:  []string{"read_only", "idempotent"},
		Examples: []capability.Example{{Input: map[string]any{"city": "Paris"}, Output: fakeWeather("Paris")}},
	}

	dayItem := object(false, map[string]any{
		"date":                 prop("string", "The day (UTC calendar date), YYYY-MM-DD; the first is today.", "format", "date"),
		"high_c":               prop("number", "Highest temperature in °C, one decimal."),
		"low_c":                prop("number", "Lowest temperature in °C, one decimal."),
		"conditions":           conditions,
		"precipitation_chance": prop("integer", "Chance of precipitation in percent.", "minimum", int64(0), "maximum", int64(100)),
	}, "date", "high_c", "low_c", "conditions", "precipitation_chance")
	forecast := capability.Definition{
		Domain:      everrunsDomain,
		Name:        "get_forecast",
		Title:       "Get forecast",
		Description: fmt.Sprintf("Get a multi-day weather forecast for a city, starting today: %d days unless told, at most %d (a larger days is clamped to %d and the output says so with clamped and note). Mock data for testing tool calling: deterministic, derived from the city name.", forecastDefaultDays, forecastMaxDays, forecastMaxDays),
		Keywords:    []string{"weather", "forecast", "mock"},
		Input: object(true, map[string]any{
			"city": city,
			"days": prop("integer", fmt.Sprintf("Number of days, from 1; defaults to %d; values above %d are clamped to %d.", forecastDefaultDays, forecastMaxDays, forecastMaxDays), "minimum", int64(1), "default", int64(forecastDefaultDays)),
		}, "city"),
		Output: object(false, map[string]any{
			"city":           prop("string", "The city, as given (trimmed)."),
			"days":           prop("integer", "Number of days forecast.", "minimum", int64(1), "maximum", int64(forecastMaxDays)),
			"requested_days": prop("integer", "Number of days asked for."),
			"clamped":        prop("boolean", fmt.Sprintf("True when more than %d days were asked for and the forecast was cut to %d.", forecastMaxDays, forecastMaxDays)),
			"note":           prop("string", "Present when clamped: says what was cut."),
			"forecast":       prop("array", "One entry per day, in order.", "items", dayItem),
			"simulated":      prop("boolean", "Always true: the data is fake."),
		}, "city", "days", "requested_days", "clamped", "forecast", "simulated"),
		Errors: []capability.ErrorDef{
			cityErr,
			errDef("INVALID_DAYS", false, "days is below 1; ask for 1 to 7 days."),
		},
		Effects: []string{"read_only", "idempotent"},
		Examples: []capability.Example{
			{Description: "two days for Oslo, on 2026-01-15", Input: map[string]any{"city": "Oslo", "days": int64(2)}, Output: fakeForecast("Oslo", 2, exampleNow)},
		},
	}
	return []entry{
		{def: define(weather), handler: func(*env) Handler { return weatherHandler }},
		{def: define(forecast), handler: func(e *env) Handler { return forecastHandler(e) }},
	}
}

// exampleNow is the instant the examples of time-dependent built-ins assume.
var exampleNow = time.Date(2026, 1, 15, 17, 30, 0, 0, time.UTC)

// cityField reads and checks the city input.
func cityField(in map[string]any) (string, error) {
	city, _, err := stringField(in, "city")
	if err != nil {
		return "", err
	}
	city = strings.TrimSpace(city)
	switch {
	case city == "":
		return "", invoke.Errorf("INVALID_CITY", false, "the city is blank: give a city name such as \"Paris\"")
	case len([]rune(city)) > cityMaxLength:
		return "", invoke.Errorf("INVALID_CITY", false, "the city name is %d characters long: give at most %d", len([]rune(city)), cityMaxLength)
	}
	return city, nil
}

func weatherHandler(_ context.Context, call *invoke.Call) (any, error) {
	city, err := cityField(inputOf(call))
	if err != nil {
		return nil, err
	}
	return fakeWeather(city), nil
}

func forecastHandler(e *env) Handler {
	return func(_ context.Context, call *invoke.Call) (any, error) {
		in := inputOf(call)
		city, err := cityField(in)
		if err != nil {
			return nil, err
		}
		days, err := integerField(in, "days", forecastDefaultDays)
		if err != nil {
			return nil, err
		}
		if days < 1 {
			return nil, invoke.Errorf("INVALID_DAYS", false, "days is %d: ask for 1 to %d days", days, forecastMaxDays)
		}
		return fakeForecast(city, days, e.Now()), nil
	}
}

// cityHash is a stable 64-bit hash of a city name and a salt (FNV-1a, fixed
// forever, unlike math/rand streams): the same city always gets the same
// weather. Case, surrounding and repeated spaces are ignored.
func cityHash(city, salt string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(strings.Join(strings.Fields(city), " "))))
	h.Write([]byte{0})
	h.Write([]byte(salt))
	return h.Sum64()
}

// tenths turns a count of tenths into a number with one decimal.
func tenths(n int64) float64 { return float64(n) / 10 }

// celsiusToFahrenheit converts, rounded to one decimal.
func celsiusToFahrenheit(c float64) float64 { return math.Round((c*9/5+32)*10) / 10 }

// fakeConditions picks conditions from a hash, snowy when freezing.
func fakeConditions(h uint64, tempC float64) string {
	c := weatherConditions[h%uint64(len(weatherConditions))]
	if tempC <= 0 && (c == "rainy" || c == "stormy") {
		return "snowy"
	}
	return c
}

// fakeWeather is the current weather of a city: -10.0 to 37.9 °C, 25 to
// 94 % humidity, 0 to 44 km/h wind.
func fakeWeather(city string) map[string]any {
	tempC := tenths(int64(cityHash(city, "temperature")%480) - 100)
	return map[string]any{
		"city":          city,
		"temperature_c": tempC,
		"temperature_f": celsiusToFahrenheit(tempC),
		"conditions":    fakeConditions(cityHash(city, "conditions"), tempC),
		"humidity":      int64(cityHash(city, "humidity")%70) + 25,
		"wind_kph":      int64(cityHash(city, "wind") % 45),
		"simulated":     true,
	}
}

// fakeForecast is the forecast of a city for days days (clamped to
// forecastMaxDays) from the UTC date of now.
func fakeForecast(city string, days int64, now time.Time) map[string]any {
	n := min(days, forecastMaxDays)
	today := now.UTC()
	list := make([]any, n)
	for i := range n {
		day := strconv.FormatInt(i, 10)
		high := tenths(int64(cityHash(city, "high/"+day)%450) - 80)
		low := math.Round((high-4-tenths(int64(cityHash(city, "spread/"+day)%80)))*10) / 10
		list[i] = map[string]any{
			"date":                 today.AddDate(0, 0, int(i)).Format("2006-01-02"),
			"high_c":               high,
			"low_c":                low,
			"conditions":           fakeConditions(cityHash(city, "conditions/"+day), low),
			"precipitation_chance": int64(cityHash(city, "precipitation/"+day) % 101),
		}
	}
	out := map[string]any{
		"city":           city,
		"days":           n,
		"requested_days": days,
		"clamped":        days > forecastMaxDays,
		"forecast":       list,
		"simulated":      true,
	}
	if days > forecastMaxDays {
		out["note"] = fmt.Sprintf("%d days were asked for; the forecast covers at most %d, so it was clamped to %d", days, forecastMaxDays, forecastMaxDays)
	}
	return out
}
