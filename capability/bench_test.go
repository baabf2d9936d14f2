package capability

import (
	"fmt"
	"testing"
)

func BenchmarkParseURI(b *testing.B) {
	inputs := []string{
		"ossa:security/scan_vulnerabilities@1.0",
		"mcp:filesystem/read_file@12.34",
		"ossa:code/lint",
		"mcp:everything/printEnv@2",
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := ParseURI(inputs[i%len(inputs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNegotiate1000 negotiates over 1,000 available versions of one
// capability (majors 1 to 4, minors 0 to 249, shuffled), plus a few other
// capabilities, with two preferred versions of which only the second can be
// met, and a minimum.
func BenchmarkNegotiate1000(b *testing.B) {
	const base = "ossa:security/scan_vulnerabilities"
	var available []URI
	for i := 0; i < 1000; i++ {
		// 7919 is prime, so i*7919 mod 1000 visits every index once, out of order.
		j := i * 7919 % 1000
		available = append(available, MustParseURI(fmt.Sprintf("%s@%d.%d", base, 1+j/250, j%250)))
	}
	available = append(available, MustParseURI("ossa:code/lint@1.0"), MustParseURI("mcp:security/scan_vulnerabilities@3.0"))
	req := NegotiationRequest{
		Type:              NegotiationRequestType,
		Capability:        base,
		PreferredVersions: []string{"7.0", "3.100"},
		MinimumVersion:    "3.120",
	}
	want := base + "@3.249"
	b.ReportAllocs()
	for b.Loop() {
		resp := Negotiate(req, available)
		if resp.Status != StatusAvailable || resp.Capability != want {
			b.Fatalf("Negotiate = %+v, want %s", resp, want)
		}
	}
}
