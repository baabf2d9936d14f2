package agentos

import (
	"reflect"
	"testing"

	"github.com/caphub/caphub/capability"
)

func TestMatchIntent(t *testing.T) {
	tests := []struct {
		pattern, intent string
		want            bool
	}{
		{"messaging.send_text", "messaging.send_text", true},
		{"messaging.send_text", "messaging.send_media", false},
		{"messaging.send_text", "Messaging.send_text", false}, // exact, case-sensitive
		{"messaging.send_text", "messaging.send_text.urgent", false},
		{"messaging.send", "messaging.send_text", false}, // no prefix matching without *
		{"messaging.*", "messaging.send_text", true},
		{"messaging.*", "messaging.send.text", true}, // a last * matches one or more segments
		{"messaging.*", "messaging", false},
		{"messaging.*", "calendar.create_event", false},
		{"*.send_text", "messaging.send_text", true},
		{"*.send_text", "messaging.send_media", false},
		{"*.send_text", "a.messaging.send_text", false}, // an inner * is one segment
		{"messaging.*.text", "messaging.send.text", true},
		{"messaging.*.text", "messaging.send.media", false},
		{"*", "anything.at.all", true},
		{"*", "x", true},
		{"", "messaging.send_text", false},
		{"messaging.send_text", "", false},
	}
	for _, tt := range tests {
		if got := MatchIntent(tt.pattern, tt.intent); got != tt.want {
			t.Errorf("MatchIntent(%q, %q) = %v, want %v", tt.pattern, tt.intent, got, tt.want)
		}
	}
}

func TestResolveIntent(t *testing.T) {
	def := func(name string, intents ...string) capability.Definition {
		return capability.Definition{Name: name, Intents: intents}
	}
	defs := []capability.Definition{
		def("catch_all", "*"),
		def("whatsapp_send", "messaging.send_text", "messaging.send_media"),
		def("any_messaging", "messaging.*"),
		def("calendar", "calendar.create_event"),
		def("telegram_send", "messaging.*", "messaging.send_text"), // ranked by its best pattern
		def("send_anywhere", "*.send_text"),
	}
	names := func(ds []capability.Definition) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	tests := []struct {
		intent string
		want   []string
	}{
		// exact declarations first (in the order given), then one-literal
		// wildcards (in the order given), then the catch-all.
		{"messaging.send_text", []string{"whatsapp_send", "telegram_send", "any_messaging", "send_anywhere", "catch_all"}},
		{"messaging.start_call", []string{"any_messaging", "telegram_send", "catch_all"}},
		{"calendar.create_event", []string{"calendar", "catch_all"}},
		{"calendar.send_text", []string{"send_anywhere", "catch_all"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := names(ResolveIntent(tt.intent, defs)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ResolveIntent(%q) = %v, want %v", tt.intent, got, tt.want)
		}
	}

	// On imported manifests: the seed's WhatsApp and the Telegram test app.
	all := append(importFile(t, "testdata/whatsapp.json").Definitions, importFile(t, "testdata/broken.json").Definitions...)
	all = append(all, importFile(t, "testdata/contacts.json").Definitions...)
	var uris []string
	for _, d := range ResolveIntent("messaging.send_text", all) {
		uris = append(uris, d.URI)
	}
	want := []string{"ossa:com-whatsapp/send_message@1.0", "ossa:org-telegram-messenger/send_message@1.0"}
	if !reflect.DeepEqual(uris, want) {
		t.Errorf("messaging.send_text resolves to %v, want %v", uris, want)
	}
	// contacts.json's share_contact declares sharing.*.
	if got := ResolveIntent("sharing.send_file", all); len(got) != 1 || got[0].Name != "share_contact" {
		t.Errorf("sharing.send_file resolves to %v, want share_contact", names(got))
	}
}
