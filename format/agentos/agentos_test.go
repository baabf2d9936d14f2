package agentos

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caphub/caphub/capability"
)

var fixedTime = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func importFile(t *testing.T, path string) *Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(path, data, Options{CreatedAt: fixedTime})
	if err != nil {
		t.Fatalf("Import(%s): %v", path, err)
	}
	return res
}

func byName(t *testing.T, res *Result, name string) capability.Definition {
	t.Helper()
	for _, d := range res.Definitions {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no definition named %q among %d", name, len(res.Definitions))
	return capability.Definition{}
}

// at returns the line and column where marker first occurs in text.
func at(t *testing.T, text, marker string) (int, int) {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("marker %q not in the manifest", marker)
	}
	return position([]byte(text), i)
}

// props returns the properties of an object schema.
func props(t *testing.T, s capability.Schema) map[string]any {
	t.Helper()
	p, ok := s["properties"].(map[string]any)
	if !ok {
		t.Fatalf("schema has no properties: %v", s)
	}
	return p
}

// TestImportSeedExample imports the seed's WhatsApp manifest, verbatim.
func TestImportSeedExample(t *testing.T) {
	res := importFile(t, "testdata/whatsapp.json")
	if len(res.Failures) != 0 || len(res.Definitions) != 2 {
		t.Fatalf("got %d definitions, failures %v; want 2 and none", len(res.Definitions), res.Failures)
	}

	send := byName(t, res, "send_message")
	contact, _ := dataTypeSchema("contact")
	contact["description"] = "The person to send the message to"
	contact["x-agentos-type"] = "contact"
	contact["x-vault-key"] = "contacts"
	media, _ := dataTypeSchema("media")
	media["description"] = "Photos or videos to attach"
	media["x-agentos-type"] = "media"
	want := capability.Definition{
		URI:         "ossa:com-whatsapp/send_message@1.0",
		Name:        "send_message",
		Domain:      "com-whatsapp",
		Version:     "1.0.0",
		Title:       "WhatsApp: Send message",
		Description: "Send a text message or media to a contact via WhatsApp",
		Input: capability.Schema{
			"type": "object",
			"properties": map[string]any{
				"recipient": contact,
				"text":      map[string]any{"type": "string", "description": "Text content of the message", "x-agentos-type": "string"},
				"media":     media,
			},
			"required": []any{"recipient"},
		},
		Output: capability.Schema{
			"type": "object",
			"properties": map[string]any{
				"messageId": map[string]any{"type": "string", "description": "ID of the sent message", "x-agentos-type": "string"},
			},
		},
		Bindings: capability.Bindings{Extra: map[string]any{
			"intent": map[string]any{"type": "intent", "target": "com.whatsapp.SEND_MESSAGE", "package": "com.whatsapp", "executable_on_server": false},
		}},
		Permissions: []string{"contacts", "media.read"},
		Domains:     []string{"com.whatsapp", "com.whatsapp.messages"},
		Categories:  []string{"notify"},
		Intents:     []string{"messaging.send_text", "messaging.send_media"},
		Keywords:    []string{"whatsapp", "message", "text", "photo", "video", "send"},
		Provenance:  &capability.Provenance{Method: "agentos_manifest", SourceURL: "testdata/whatsapp.json", CreatedAt: "2025-06-01T12:00:00Z"},
		Metadata: map[string]any{"agentos": map[string]any{
			"package": "com.whatsapp", "display_name": "WhatsApp", "manifest_version": "1.0", "capability_id": "send_message",
		}},
	}
	want.Normalize()
	if !reflect.DeepEqual(send, want) {
		t.Errorf("send_message:\n got %#v\nwant %#v", send, want)
	}

	call := byName(t, res, "start_call")
	if call.URI != "ossa:com-whatsapp/start_call@1.0" || !call.UIRequired {
		t.Errorf("start_call: uri %s ui_required %v", call.URI, call.UIRequired)
	}
	if !reflect.DeepEqual(call.Input["required"], []any{"recipient"}) {
		t.Errorf("start_call required = %v, want [recipient] (callType says required: false)", call.Input["required"])
	}
	if !reflect.DeepEqual(call.Output, capability.Schema{}) {
		t.Errorf("start_call declares no outputs: output = %v, want {}", call.Output)
	}
	wantBinding := map[string]any{"type": "deeplink", "package": "com.whatsapp", "executable_on_server": false,
		"target": "whatsapp://call?phone={{recipient.phone}}&video={{callType == 'video'}}"}
	if got := call.Bindings.Extra["deeplink"]; !reflect.DeepEqual(got, wantBinding) {
		t.Errorf("deeplink binding = %v, want %v", got, wantBinding)
	}
	if got, want := call.Permissions, []string{"contacts", "microphone", "camera"}; !reflect.DeepEqual(got, want) {
		t.Errorf("permissions = %v, want %v", got, want)
	}
	if got, want := call.Intents, []string{"messaging.start_call", "messaging.video_call"}; !reflect.DeepEqual(got, want) {
		t.Errorf("intents = %v, want %v", got, want)
	}
}

// TestContactsManifest covers every DataType, every handler kind, the
// required default, vaultKey, label and unknown fields, in a tab-indented file.
func TestContactsManifest(t *testing.T) {
	res := importFile(t, "testdata/contacts.json")
	if len(res.Failures) != 0 || len(res.Definitions) != 4 {
		t.Fatalf("got %d definitions, failures %v; want 4 and none", len(res.Definitions), res.Failures)
	}

	// Every DataType of the seed is used somewhere, and mapped as dataTypeSchema says.
	used := map[string]bool{}
	for _, d := range res.Definitions {
		for _, s := range []capability.Schema{d.Input, d.Output} {
			if len(s) == 0 {
				continue
			}
			for name, p := range props(t, s) {
				prop := p.(map[string]any)
				dt, _ := prop["x-agentos-type"].(string)
				used[dt] = true
				want, ok := dataTypeSchema(dt)
				if !ok {
					t.Fatalf("%s.%s: x-agentos-type %q is not a DataType", d.Name, name, dt)
				}
				for k, v := range capability.Normalize(want).(map[string]any) {
					if !reflect.DeepEqual(prop[k], v) {
						t.Errorf("%s.%s (%s): %s = %v, want %v", d.Name, name, dt, k, prop[k], v)
					}
				}
			}
		}
	}
	for _, dt := range dataTypes {
		if !used[dt] {
			t.Errorf("testdata/contacts.json uses no %s parameter", dt)
		}
	}

	find := byName(t, res, "find_contact")
	if got := find.Input["required"]; !reflect.DeepEqual(got, []any{"query"}) {
		t.Errorf("find_contact required = %v, want [query]: no required flag means required", got)
	}
	if got := props(t, find.Input)["starredOnly"].(map[string]any)["title"]; got != "Favourites only" {
		t.Errorf("label not kept as title: %v", got)
	}
	if got, want := find.Bindings.Extra["service"], map[string]any{
		"type": "service", "target": "com.android.contacts.agent.CapabilityService", "package": "com.android.contacts",
		"extras": map[string]any{"operation": "search", "maxResults": int64(50)}, "executable_on_server": false,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("service binding = %v, want %v", got, want)
	}

	create := byName(t, res, "create_contact")
	if got := create.Input["required"]; !reflect.DeepEqual(got, []any{"name"}) {
		t.Errorf("create_contact required = %v, want [name]", got)
	}
	if got := props(t, create.Input)["address"].(map[string]any)["x-vault-key"]; got != "home_address" {
		t.Errorf("address x-vault-key = %v, want home_address", got)
	}
	if !create.UIRequired || !reflect.DeepEqual(create.Permissions, []string{"contacts.write"}) {
		t.Errorf("create_contact ui_required %v permissions %v", create.UIRequired, create.Permissions)
	}
	if b, _ := create.Bindings.Extra["intent"].(map[string]any); b["target"] != "android.intent.action.INSERT" {
		t.Errorf("intent binding = %v", create.Bindings.Extra)
	}

	// shareContact: camelCase id → share_contact; priority is kept in metadata.
	share := byName(t, res, "share_contact")
	meta := share.Metadata["agentos"].(map[string]any)
	if meta["capability_id"] != "shareContact" || !reflect.DeepEqual(meta["extra"], map[string]any{"priority": int64(10)}) {
		t.Errorf("share_contact metadata = %v", meta)
	}
	if share.UIRequired {
		t.Error("uiRequired absent must be false")
	}
	if got := share.Input["required"]; !reflect.DeepEqual(got, []any{"contact"}) {
		t.Errorf("share_contact required = %v, want [contact]", got)
	}
	if _, ok := share.Bindings.Extra["broadcast"]; !ok {
		t.Errorf("no broadcast binding: %v", share.Bindings.Extra)
	}

	meetup := byName(t, res, "plan_meetup")
	if got, want := meetup.Input["required"], []any{"attendees", "start", "place"}; !reflect.DeepEqual(got, want) {
		t.Errorf("plan_meetup required = %v, want %v (in input order)", got, want)
	}
	if got := props(t, meetup.Input)["topics"].(map[string]any)["x-agentos-example"]; !reflect.DeepEqual(got, []any{"lunch"}) {
		t.Errorf("unknown input field not kept as x-agentos-example: %v", got)
	}
	if _, ok := meetup.Bindings.Extra["deeplink"]; !ok {
		t.Errorf("no deeplink binding: %v", meetup.Bindings.Extra)
	}
	if _, ok := meetup.Output["required"]; ok {
		t.Error("outputs must not be required")
	}
}

// TestDefinitionsValidate: everything imported compiles and validates with
// no error; the only binding issue is the warning that the device-only
// handler kind cannot be executed by caphub.
func TestDefinitionsValidate(t *testing.T) {
	for _, f := range []string{"testdata/whatsapp.json", "testdata/contacts.json", "testdata/broken.json"} {
		for _, d := range importFile(t, f).Definitions {
			for _, s := range []capability.Schema{d.Input, d.Output} {
				if _, issues := capability.CompileSchema(s); len(issues) > 0 {
					t.Errorf("%s: schema does not compile: %v", d.URI, issues)
				}
			}
			kinds := d.Bindings.Types()
			if len(kinds) != 1 || !IsDeviceBinding(kinds[0]) {
				t.Errorf("%s: bindings %v, want one device handler", d.URI, kinds)
			}
			warned := false
			for _, iss := range capability.Validate(&d) {
				if iss.Severity == capability.SeverityError {
					t.Errorf("%s: %s", d.URI, iss)
				}
				if strings.HasPrefix(iss.Path, "bindings") {
					if iss.Path != "bindings."+kinds[0] || iss.Severity != capability.SeverityWarning {
						t.Errorf("%s: unexpected binding issue %s", d.URI, iss)
					}
					warned = true
				}
			}
			if !warned {
				t.Errorf("%s: no warning that %s cannot be executed", d.URI, kinds[0])
			}
		}
	}
}

// TestDataTypeSchemas checks each mapping by validating instances.
func TestDataTypeSchemas(t *testing.T) {
	tests := []struct {
		dataType  string
		typ       any // the schema's type, or nil (media)
		format    string
		valid     []any
		invalid   []any
		hasFields []string
	}{
		{"string", "string", "", []any{"hi"}, []any{int64(1)}, nil},
		{"number", "number", "", []any{int64(3), 2.5}, []any{"3"}, nil},
		{"boolean", "boolean", "", []any{true}, []any{"true"}, nil},
		{"date", "string", "date", []any{"2025-06-01"}, []any{int64(20250601)}, nil},
		{"datetime", "string", "date-time", []any{"2025-06-01T12:00:00Z"}, []any{false}, nil},
		{"phone", "string", "", []any{"+44 20 7946 0000", "07946 000000"}, []any{int64(441234)}, nil},
		{"email", "string", "email", []any{"ann@example.com"}, []any{nil}, nil},
		{"url", "string", "uri", []any{"https://example.com"}, []any{map[string]any{}}, nil},
		{"contact", "object", "", []any{map[string]any{"name": "Ann", "phone": "+1 555 0100"}, map[string]any{}},
			[]any{"Ann", map[string]any{"phone": int64(5550100)}}, []string{"id", "name", "phone", "email"}},
		{"contacts", "array", "", []any{[]any{map[string]any{"name": "Ann"}}, []any{}}, []any{map[string]any{"name": "Ann"}}, nil},
		{"media", nil, "", []any{map[string]any{"uri": "content://media/1"}, []any{map[string]any{"uri": "content://media/1"}}},
			[]any{"content://media/1", []any{"x"}}, nil},
		{"file", "object", "", []any{map[string]any{"uri": "content://f/1", "size": int64(10)}}, []any{map[string]any{"size": int64(-1)}},
			[]string{"uri", "name", "mime_type", "size"}},
		{"location", "object", "", []any{map[string]any{"latitude": 52.5, "longitude": 13.4}}, []any{map[string]any{"latitude": int64(91)}},
			[]string{"latitude", "longitude", "accuracy", "name"}},
		{"address", "object", "", []any{map[string]any{"formatted": "1 Main St, Springfield"}}, []any{"1 Main St"},
			[]string{"formatted", "street", "city", "region", "postal_code", "country"}},
		{"currency", "object", "", []any{map[string]any{"amount": 12.5, "currency": "EUR"}}, []any{map[string]any{"currency": "euro"}, int64(12)},
			[]string{"amount", "currency"}},
		{"object", "object", "", []any{map[string]any{"a": int64(1)}}, []any{[]any{}}, nil},
		{"array", "array", "", []any{[]any{int64(1), "a"}}, []any{map[string]any{}}, nil},
	}
	if len(tests) != len(dataTypes) {
		t.Errorf("%d DataTypes tested, the seed has %d", len(tests), len(dataTypes))
	}
	for _, tt := range tests {
		t.Run(tt.dataType, func(t *testing.T) {
			s, ok := dataTypeSchema(tt.dataType)
			if !ok {
				t.Fatalf("%s is not mapped", tt.dataType)
			}
			if s["type"] != tt.typ {
				t.Errorf("type = %v, want %v", s["type"], tt.typ)
			}
			if f, _ := s["format"].(string); f != tt.format {
				t.Errorf("format = %q, want %q", f, tt.format)
			}
			for _, f := range tt.hasFields {
				if _, ok := props(t, s)[f]; !ok {
					t.Errorf("no property %q", f)
				}
			}
			sch, issues := capability.CompileSchema(s)
			if len(issues) > 0 {
				t.Fatalf("does not compile: %v", issues)
			}
			for _, v := range tt.valid {
				if err := sch.Validate(v); err != nil {
					t.Errorf("%#v refused: %v", v, err)
				}
			}
			for _, v := range tt.invalid {
				if err := sch.Validate(v); err == nil {
					t.Errorf("%#v accepted", v)
				}
			}
		})
	}
	if _, ok := dataTypeSchema("integer"); ok {
		t.Error("integer is not an Agent OS DataType")
	}
}

// TestBrokenCapability: one capability with an unknown DataType fails at the
// position of the type; the others are imported.
func TestBrokenCapability(t *testing.T) {
	res := importFile(t, "testdata/broken.json")
	var names []string
	for _, d := range res.Definitions {
		names = append(names, d.Name)
	}
	if !reflect.DeepEqual(names, []string{"send_message", "start_call"}) {
		t.Errorf("imported %v, want [send_message start_call]", names)
	}
	if len(res.Failures) != 1 {
		t.Fatalf("failures = %v, want one", res.Failures)
	}
	f := res.Failures[0]
	want := capability.ImportFailure{
		Item: "capabilities[1] (schedule_message)", File: "testdata/broken.json", Line: 54, Column: 19,
		Reason: `inputs[2].type: "integer" is not an Agent OS DataType (for "integer" use "number"): use one of address, array, boolean, contact, contacts, currency, date, datetime, email, file, location, media, number, object, phone, string, url`,
	}
	if f != want {
		t.Errorf("failure\n got %+v\nwant %+v", f, want)
	}
}

const good = `{"id": "ok", "intents": ["a.b"], "description": "fine", "handler": {"type": "intent", "target": "X"}}`

// manifest wraps capability JSON (placed after the good one) in a manifest.
func manifest(caps string) string {
	return "{\n  \"manifestVersion\": \"1.0\",\n  \"package\": \"com.example.app\",\n  \"capabilities\": [\n    " + good + ",\n    " + caps + "\n  ]\n}\n"
}

// TestCapabilityFailures: each broken capability is one failure, at the
// position of what is wrong, and the good capability is still imported.
func TestCapabilityFailures(t *testing.T) {
	tests := []struct {
		name   string
		cap    string
		at     string // the failure is at the first occurrence of this text in the manifest
		reason string // ... and its reason contains this
	}{
		{"missing id", `{"intents": ["x"], "description": "d", "handler": {"type": "intent"}}`, `{"intents": ["x"]`, "id: missing"},
		{"id not a string", `{"id": 7, "intents": ["x"], "description": "d", "handler": {"type": "intent"}}`, `7,`, `id: must be a string such as "send_message", got the number 7`},
		{"id without letters", `{"id": "__", "intents": ["x"], "description": "d", "handler": {"type": "intent"}}`, `"__"`, "has no letters or digits"},
		{"duplicate id", good, `{"id": "ok", "intents": ["a.b"], "description": "fine", "handler": {"type": "intent", "target": "X"}},`, ""}, // replaced below
		{"same name after sanitising", `{"id": "OK", "intents": ["x"], "description": "d", "handler": {"type": "intent"}}`, `"OK"`, `"OK" is the same capability name (ok) as capabilities[0]`},
		{"not an object", `"send_message"`, `"send_message"`, "must be an object"},
		{"missing intents", `{"id": "c", "description": "d", "handler": {"type": "intent"}}`, `{"id": "c"`, "intents: missing"},
		{"intents not an array", `{"id": "c", "intents": "a.b", "description": "d", "handler": {"type": "intent"}}`, `"a.b", "desc`, "intents: must be an array of strings"},
		{"empty intent", `{"id": "c", "intents": ["a.c", " "], "description": "d", "handler": {"type": "intent"}}`, `" "`, "intents[1]: is empty"},
		{"intent not a string", `{"id": "c", "intents": [true], "description": "d", "handler": {"type": "intent"}}`, `true`, "intents[0]: must be a string, got true"},
		{"missing description", `{"id": "c", "intents": ["x"], "handler": {"type": "intent"}}`, `{"id": "c"`, "description: missing"},
		{"blank description", `{"id": "c", "intents": ["x"], "description": "", "handler": {"type": "intent"}}`, `"", "handler"`, "description: is empty"},
		{"keywords not strings", `{"id": "c", "intents": ["x"], "description": "d", "keywords": [1], "handler": {"type": "intent"}}`, `1]`, "keywords[0]: must be a string"},
		{"empty permission", `{"id": "c", "intents": ["x"], "description": "d", "permissions": [""], "handler": {"type": "intent"}}`, `""]`, "permissions[0]: is empty"},
		{"uiRequired not boolean", `{"id": "c", "intents": ["x"], "description": "d", "uiRequired": "yes", "handler": {"type": "intent"}}`, `"yes"`, "uiRequired: must be true or false"},
		{"missing handler", `{"id": "c", "intents": ["x"], "description": "d"}`, `{"id": "c"`, "handler: missing"},
		{"handler not an object", `{"id": "c", "intents": ["x"], "description": "d", "handler": "intent"}`, `"intent"}`, "handler: must be an object"},
		{"handler without type", `{"id": "c", "intents": ["x"], "description": "d", "handler": {"target": "X"}}`, `{"target"`, "handler.type: missing"},
		{"unknown handler type", `{"id": "c", "intents": ["x"], "description": "d", "handler": {"type": "activity"}}`, `"activity"`, `"activity" is not an Agent OS handler type: use one of intent, service, broadcast, deeplink`},
		{"handler target not a string", `{"id": "c", "intents": ["x"], "description": "d", "handler": {"type": "intent", "target": 1}}`, `1}`, "handler.target: must be a string"},
		{"handler extras not an object", `{"id": "c", "intents": ["x"], "description": "d", "handler": {"type": "intent", "extras": []}}`, `[]}`, "handler.extras: must be an object"},
		{"inputs not an array", `{"id": "c", "intents": ["x"], "description": "d", "inputs": {}, "handler": {"type": "intent"}}`, `{}, "handler"`, "inputs: must be an array"},
		{"input not an object", `{"id": "c", "intents": ["x"], "description": "d", "inputs": ["to"], "handler": {"type": "intent"}}`, `"to"`, "inputs[0]: must be an object"},
		{"input without name", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"type": "string"}], "handler": {"type": "intent"}}`, `{"type": "string"}`, "inputs[0].name: missing"},
		{"input without type", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to"}], "handler": {"type": "intent"}}`, `{"name": "to"}`, "inputs[0].type: missing"},
		{"type not a string", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": ["string"]}], "handler": {"type": "intent"}}`, `["string"]`, "inputs[0].type: must be a DataType string"},
		{"unknown DataType", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": "integer"}], "handler": {"type": "intent"}}`, `"integer"`, `(for "integer" use "number")`},
		{"upper-case DataType", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": "String"}], "handler": {"type": "intent"}}`, `"String"`, `DataTypes are lower case: "string"`},
		{"duplicate input", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": "string"}, {"name": "to", "type": "phone"}], "handler": {"type": "intent"}}`, `"to", "type": "phone"`, `inputs[1].name: "to" is already the name of inputs[0]`},
		{"required not boolean", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": "string", "required": "no"}], "handler": {"type": "intent"}}`, `"no"`, "inputs[0].required: must be true or false"},
		{"vaultKey not a string", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": "contact", "vaultKey": {}}], "handler": {"type": "intent"}}`, `{}}]`, "inputs[0].vaultKey: must be a string"},
		{"description not a string", `{"id": "c", "intents": ["x"], "description": "d", "inputs": [{"name": "to", "type": "string", "description": 5}], "handler": {"type": "intent"}}`, `5}`, "inputs[0].description: must be a string"},
		{"unknown output DataType", `{"id": "c", "intents": ["x"], "description": "d", "outputs": [{"name": "id", "type": "uuid"}], "handler": {"type": "intent"}}`, `"uuid"`, `outputs[0].type: "uuid" is not an Agent OS DataType`},
		{"non-ASCII before the error", `{"id": "c", "intents": ["x"], "description": "Grüße, 日本", "inputs": [{"name": "to", "type": "int"}], "handler": {"type": "intent"}}`, `"int"`, `(for "int" use "number")`},
		{"number too large for JSON", `{"id": "c", "intents": ["x"], "description": "d", "handler": {"type": "intent", "extras": {"n": 1e999}}}`, `{"id": "c"`, "cannot be encoded as JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := manifest(tt.cap)
			at := tt.at
			reason := tt.reason
			if tt.name == "duplicate id" { // the second, identical, capability
				at = "{\"id\": \"ok\""
				text = manifest(good)
				reason = `id: "ok" is the same capability name (ok) as capabilities[0]`
			}
			res, err := Import("app.json", []byte(text), Options{})
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if len(res.Definitions) != 1 || res.Definitions[0].Name != "ok" {
				t.Errorf("the good capability was not imported: %d definitions", len(res.Definitions))
			}
			if len(res.Failures) != 1 {
				t.Fatalf("failures = %v, want one", res.Failures)
			}
			f := res.Failures[0]
			line, col := positionOf(t, text, at, tt.name == "duplicate id")
			if f.File != "app.json" || f.Line != line || f.Column != col {
				t.Errorf("failure at %s:%d:%d, want app.json:%d:%d (%q)\n%s", f.File, f.Line, f.Column, line, col, at, f)
			}
			if !strings.HasPrefix(f.Item, "capabilities[1]") || !strings.Contains(f.Reason, reason) {
				t.Errorf("failure %q\nwant item capabilities[1] and reason containing %q", f, reason)
			}
		})
	}
}

// positionOf is at, or the second occurrence of marker when second is set.
func positionOf(t *testing.T, text, marker string, second bool) (int, int) {
	t.Helper()
	if !second {
		return at(t, text, marker)
	}
	i := strings.Index(text, marker)
	j := strings.Index(text[i+1:], marker)
	if i < 0 || j < 0 {
		t.Fatalf("marker %q is not in the manifest twice", marker)
	}
	// The failure points at the id's value, "ok", of the second capability.
	return position([]byte(text), i+1+j+len(`{"id": `))
}

// TestFileErrors: a file that is not a manifest is an *Error with its position.
func TestFileErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line, col  int
		want       string
	}{
		{"empty", "", 1, 1, "unexpected end of file"},
		{"invalid JSON", "{\n  \"package\": \"a\",\n  \"capabilities\": [,]\n}", 3, 20, "invalid JSON: invalid character ','"},
		{"cut short", "{\n  \"package\": \"a\",\n  \"capabilities\": [", 3, 20, "unexpected end of file"},
		{"trailing data", "{\"manifestVersion\": \"1.0\", \"package\": \"a\", \"capabilities\": []}\n{}", 2, 1, "unexpected data after the top-level JSON value"},
		{"not an object", "[1, 2]", 1, 1, "the manifest is a JSON array"},
		{"bad literal", "{\n  \"manifestVersion\": tru }", 2, 25, "invalid JSON: invalid character ' ' in literal true"},
		{"bad string", "{\n  \"package\": \"a\tb\" }", 2, 16, "invalid JSON: invalid character '\\t' in string literal"},
		{"bad number", "{\n  \"package\": 01 }", 2, 15, "invalid JSON: invalid character '1' after object key:value pair"},
		{"no manifestVersion", `{"package": "a", "capabilities": []}`, 1, 1, "manifestVersion: missing"},
		{"bad manifestVersion", `{"manifestVersion": 1, "package": "a", "capabilities": []}`, 1, 21, `manifestVersion: must be a string MAJOR.MINOR such as "1.0", got the number 1`},
		{"unsupported manifestVersion", `{"manifestVersion": "2.0", "package": "a", "capabilities": []}`, 1, 21, `"2.0" is not supported`},
		{"no package", `{"manifestVersion": "1.0", "capabilities": []}`, 1, 1, "package: missing"},
		{"package not a string", `{"manifestVersion": "1.0", "package": ["a"], "capabilities": []}`, 1, 39, "package: must be a string"},
		{"package without letters", `{"manifestVersion": "1.0", "package": "...", "capabilities": []}`, 1, 39, "has no letters or digits"},
		{"displayName not a string", `{"manifestVersion": "1.0", "package": "a", "displayName": 3, "capabilities": []}`, 1, 59, "displayName: must be a string"},
		{"no capabilities", `{"manifestVersion": "1.0", "package": "a"}`, 1, 1, "capabilities: missing"},
		{"capabilities not an array", "{\"manifestVersion\": \"1.0\",\n\t\"package\": \"a\",\n\t\"capabilities\": {}}", 3, 18, "capabilities: must be an array"},
		{"too deep", `{"manifestVersion": "1.0", "package": "a", "capabilities": [` + strings.Repeat("[", 1000), 1, 60 + maxDepth, "nesting deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import("caps.json", []byte(tt.text), Options{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, %v; want an *Error", res, err)
			}
			if e.File != "caps.json" || e.Line != tt.line || e.Column != tt.col || !strings.Contains(e.Error(), tt.want) {
				t.Errorf("error %q at %d:%d\nwant caps.json:%d:%d containing %q", e, e.Line, e.Column, tt.line, tt.col, tt.want)
			}
			if !strings.HasPrefix(e.Error(), "caps.json:") {
				t.Errorf("error %q does not start with the file", e)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		manifestVersion string // the manifest's "version" field; "" for none
		opt             string
		want, wantURI   string
	}{
		{"", "", "1.0.0", "@1.0"},
		{`"2.3.1"`, "", "2.3.1", "@2.3"},
		{`"v1.4"`, "", "1.4.0", "@1.4"},
		{`"3"`, "", "3.0.0", "@3.0"},
		{`2.5`, "", "2.5.0", "@2.5"},
		{`"1.2.0-beta.1"`, "", "1.2.0-beta.1", "@1.2"},
		{`"2024.10.1.5"`, "", "1.0.0", "@1.0"}, // not semantic: the default
		{`"latest"`, "", "1.0.0", "@1.0"},
		{`"2.3.1"`, "4.1", "4.1.0", "@4.1"},
	}
	for _, tt := range tests {
		t.Run(tt.manifestVersion+"/"+tt.opt, func(t *testing.T) {
			v := ""
			if tt.manifestVersion != "" {
				v = `"version": ` + tt.manifestVersion + ", "
			}
			text := `{"manifestVersion": "1.0", "package": "com.example", ` + v + `"capabilities": [` + good + `]}`
			res, err := Import("m.json", []byte(text), Options{Version: tt.opt})
			if err != nil || len(res.Definitions) != 1 {
				t.Fatalf("Import: %v %v", res, err)
			}
			d := res.Definitions[0]
			if d.Version != tt.want || d.URI != "ossa:com-example/ok"+tt.wantURI {
				t.Errorf("version %s uri %s, want %s and …%s", d.Version, d.URI, tt.want, tt.wantURI)
			}
		})
	}
	if _, err := Import("m.json", []byte(manifest(good)), Options{Version: "v2"}); err == nil || !strings.Contains(err.Error(), "version to import as") {
		t.Errorf("a bad Options.Version must be an error, got %v", err)
	}
}

func TestSanitize(t *testing.T) {
	domains := []struct{ in, want string }{
		{"com.whatsapp", "com-whatsapp"},
		{"org.telegram.messenger", "org-telegram-messenger"},
		{"com.Example.My_App", "com-example-my-app"},
		{"1password.android", "app-1password-android"},
		{"  com..x--y  ", "com-x-y"},
		{"é.ü", ""},
	}
	for _, tt := range domains {
		if got := sanitizeDomain(tt.in); got != tt.want {
			t.Errorf("sanitizeDomain(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	names := []struct{ in, want string }{
		{"send_message", "send_message"},
		{"sendMessage", "send_message"},
		{"SendHTTPRequest", "send_http_request"},
		{"start-call", "start_call"},
		{"v2Call", "v2_call"},
		{"2fa_code", "cap_2fa_code"},
		{"__x__", "x"},
		{"---", ""},
	}
	for _, tt := range names {
		if got := sanitizeName(tt.in); got != tt.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestProvenanceAndInference(t *testing.T) {
	res := importFile(t, "testdata/broken.json")
	d := byName(t, res, "send_message")
	if p := d.Provenance; p == nil || p.Method != provenanceMethod || p.SourceURL != "testdata/broken.json" || p.CreatedAt != "2025-06-01T12:00:00Z" {
		t.Errorf("provenance = %+v", d.Provenance)
	}
	if !reflect.DeepEqual(d.Domains, []string{"org.telegram.messenger", "org.telegram.messenger.messages"}) ||
		!reflect.DeepEqual(d.Categories, []string{"notify"}) {
		t.Errorf("domains %v categories %v", d.Domains, d.Categories)
	}
	// Import without CreatedAt stamps the current time.
	res2, err := Import("x.json", []byte(manifest(`{"id": "c", "intents": ["x"], "description": "d", "handler": {"type": "intent"}}`)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := time.Parse(time.RFC3339, res2.Definitions[0].Provenance.CreatedAt)
	if err != nil || time.Since(ts) > time.Minute {
		t.Errorf("created_at %q is not now", res2.Definitions[0].Provenance.CreatedAt)
	}
}

// TestDefinitionsDoNotShareMaps: changing one imported definition must not
// change another (the manifest-level metadata is copied for each).
func TestDefinitionsDoNotShareMaps(t *testing.T) {
	text := `{"manifestVersion": "1.0", "package": "a", "store": {"rating": 4}, "capabilities": [` + good + `, {"id": "two", "intents": ["x"], "description": "d", "handler": {"type": "intent"}}]}`
	res, err := Import("m.json", []byte(text), Options{})
	if err != nil || len(res.Definitions) != 2 {
		t.Fatalf("%v %v", res, err)
	}
	m0 := res.Definitions[0].Metadata["agentos"].(map[string]any)["manifest_extra"].(map[string]any)
	m0["store"].(map[string]any)["rating"] = int64(1)
	m1 := res.Definitions[1].Metadata["agentos"].(map[string]any)["manifest_extra"].(map[string]any)
	if got := m1["store"].(map[string]any)["rating"]; got != int64(4) {
		t.Errorf("the second definition changed with the first: rating %v", got)
	}
}

func TestImportFile(t *testing.T) {
	res, err := ImportFile("testdata/whatsapp.json", Options{})
	if err != nil || len(res.Definitions) != 2 {
		t.Fatalf("ImportFile: %v, %v", res, err)
	}
	if _, err := ImportFile("testdata", Options{}); err == nil || !strings.Contains(err.Error(), "testdata: is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := ImportFile("testdata/missing.json", Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// A manifest with a key written twice ("package" twice registered under the
// second before), invalid UTF-8 or a lone surrogate is refused with the
// key's path and position.
func TestImportRefusesAmbiguousText(t *testing.T) {
	dupPackage := "{\n\t\"manifestVersion\": \"1.0\",\n\t\"package\": \"com.example.first\",\n\t\"package\": \"com.example.second\",\n\t\"capabilities\": []\n}"
	dupInput := strings.Replace(manifest(good), `"id": "ok",`, `"id": "ok", "id": "other",`, 1)
	badText := "{\n\t\"manifestVersion\": \"1.0\",\n\t\"package\": \"com.\xffexample\",\n\t\"capabilities\": []\n}"
	cases := []struct {
		name, text string
		want       Error
	}{
		{"package twice", dupPackage, Error{File: "m.json", Line: 4, Column: 2, Path: "package", Message: `key "package" is already defined at line 3: remove one of them`}},
		{"id twice", dupInput, Error{File: "m.json", Path: "capabilities[0].id", Message: `key "id" is already defined at line`}},
		{"invalid UTF-8", badText, Error{File: "m.json", Line: 3, Column: 18, Path: "package", Message: "invalid UTF-8 byte 0xFF"}},
		{"lone surrogate", `{"manifestVersion": "1.0", "package": "a\udc00", "capabilities": []}`, Error{File: "m.json", Line: 1, Column: 41, Path: "package", Message: `\uDC00 is half of a UTF-16 surrogate pair`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import("m.json", []byte(c.text), Options{CreatedAt: fixedTime})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not refused: %v", err)
			}
			if e.File != c.want.File || e.Path != c.want.Path || !strings.HasPrefix(e.Message, c.want.Message) ||
				(c.want.Line > 0 && (e.Line != c.want.Line || e.Column != c.want.Column)) {
				t.Errorf("got %s\nwant %+v", e, c.want)
			}
		})
	}
}
