package rtfs

import (
	"bytes"
	"os"
	"testing"

	"github.com/caphub/caphub/internal/testpeers"
)

// BenchmarkReadModule reads module/capabilities.rtfs: 40 capability forms
// in one (do …) module.
func BenchmarkReadModule(b *testing.B) {
	data, err := os.ReadFile(testpeers.Corpus(b, "ccos/module/capabilities.rtfs"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		defs, failures, err := ReadCapabilities("capabilities.rtfs", data)
		if err != nil || len(failures) > 0 || len(defs) != 40 {
			b.Fatalf("%d definitions, %v, %v", len(defs), failures, err)
		}
	}
}

// BenchmarkWriteModule writes the 40 capabilities of the module back.
func BenchmarkWriteModule(b *testing.B) {
	data, err := os.ReadFile(testpeers.Corpus(b, "ccos/module/capabilities.rtfs"))
	if err != nil {
		b.Fatal(err)
	}
	defs, _, err := ReadCapabilities("capabilities.rtfs", data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		for _, d := range defs {
			if err := WriteCapability(&buf, d); err != nil {
				b.Fatal(err)
			}
		}
	}
}
