package storetest

import (
	"reflect"
	"testing"

	"github.com/caphub/caphub/registry"
)

// testKeysWithPrefix: a store lists each
// capability once, by exact domain and name prefix or by domain prefix,
// in domain and name order, in byte order.
func testKeysWithPrefix(t *testing.T, s registry.Store) {
	kl := s
	put(t, s, def("mcp", "srv", "tool_a", "1.0.0"), def("mcp", "srv", "tool_a", "1.1.0"), def("mcp", "srv", "tool.a", "1.0.0"),
		def("mcp", "srv", "toolb", "1.0.0"), def("mcp", "srv", "Tool", "1.0.0"), def("mcp", "srv2", "tool_a", "1.0.0"),
		def("ossa", "mcp", "srv_tool_a", "1.0.0"), def("ossa", "longdomainab", "x", "1.0.0"), def("ossa", "longdomainabc", "y", "1.0.0"),
		def("ossa", "longdomainb", "z", "1.0.0"))
	k := func(scheme, domain, name string) registry.Key {
		return registry.Key{Scheme: scheme, Domain: domain, Name: name}
	}
	for _, c := range []struct {
		p    registry.KeyPrefix
		want []registry.Key
	}{
		{registry.KeyPrefix{Scheme: "mcp", Domain: "srv", Name: "tool"}, []registry.Key{k("mcp", "srv", "tool.a"), k("mcp", "srv", "tool_a"), k("mcp", "srv", "toolb")}},
		{registry.KeyPrefix{Scheme: "mcp", Domain: "srv"}, []registry.Key{k("mcp", "srv", "Tool"), k("mcp", "srv", "tool.a"), k("mcp", "srv", "tool_a"), k("mcp", "srv", "toolb")}},
		{registry.KeyPrefix{Scheme: "mcp", Domain: "srv", Name: "tool_a"}, []registry.Key{k("mcp", "srv", "tool_a")}},
		{registry.KeyPrefix{Scheme: "ossa", Domain: "mcp", Name: "srv_"}, []registry.Key{k("ossa", "mcp", "srv_tool_a")}},
		{registry.KeyPrefix{Scheme: "ossa", Domain: "longdomainab", DomainPrefix: true}, []registry.Key{k("ossa", "longdomainab", "x"), k("ossa", "longdomainabc", "y")}},
		{registry.KeyPrefix{Scheme: "ossa", Domain: "longdomainab", Name: "y"}, []registry.Key{}},
		{registry.KeyPrefix{Scheme: "mcp", Domain: "sr"}, []registry.Key{}},
	} {
		got, err := kl.KeysWithPrefix(t.Context(), c.p)
		if err != nil {
			t.Fatalf("KeysWithPrefix(%+v): %v", c.p, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("KeysWithPrefix(%+v) = %v, want %v", c.p, got, c.want)
		}
	}
}
