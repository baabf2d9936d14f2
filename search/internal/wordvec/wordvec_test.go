package wordvec

import (
	"bytes"
	"compress/gzip"
	"testing"
)

func TestBuiltin(t *testing.T) {
	tab, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() < 20000 || tab.Dims() != 100 {
		t.Fatalf("%d stems of %d dimensions, want at least 20000 of 100", tab.Len(), tab.Dims())
	}
	sim := func(a, b string) float32 {
		va, ok1 := tab.Lookup(a)
		vb, ok2 := tab.Lookup(b)
		if !ok1 || !ok2 {
			t.Fatalf("%q or %q has no vector", a, b)
		}
		return Sim(va, vb)
	}
	// Stems as package search makes them.
	for _, c := range []struct {
		a, b, unrelated string
	}{
		{"song", "track", "tax"},
		{"pictur", "imag", "invoic"},
		{"compani", "enterpris", "song"},
		{"websit", "page", "pod"},
	} {
		near, far := sim(c.a, c.b), sim(c.a, c.unrelated)
		if near < 0.5 || far >= near {
			t.Errorf("sim(%s, %s) = %.2f, sim(%s, %s) = %.2f: want the first at least 0.5 and above the second", c.a, c.b, near, c.a, c.unrelated, far)
		}
	}
	v, _ := tab.Lookup("song")
	if s := Sim(v, v); s < 0.98 || s > 1.02 {
		t.Errorf("a vector's similarity to itself is %.3f, want 1", s)
	}
	if _, ok := tab.Lookup("the"); ok {
		t.Error("stop word the has a vector: stems come from package search's analysis, which drops it")
	}
}

func TestDecodeRefuses(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	for name, data := range map[string][]byte{
		"not gzip":        []byte("hello"),
		"wrong header":    gz([]byte("something else\n\x01\x01")),
		"no stems":        gz([]byte(header + "\x00\x64")),
		"cut short":       gz([]byte(header + "\x02\x02\x01a")),
		"duplicate stems": gz([]byte(header + "\x02\x01\x01a\x01a")),
		"bad scale":       gz(append([]byte(header+"\x01\x01\x01a"), 0, 0, 0xc0, 0x7f, 1)),
	} {
		if _, err := Decode(data); err == nil {
			t.Errorf("%s: Decode accepted it", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(vectorsBin[:min(len(vectorsBin), 4096)])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(header + "\x01\x02\x01a\x00\x00\x80\x3c\x7f\x81"))
	zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Decode(data)
		if err != nil {
			return
		}
		for s := range tab.index {
			v, ok := tab.Lookup(s)
			if !ok || len(v.Q) != tab.Dims() {
				t.Fatalf("stem %q: vector of %d, want %d", s, len(v.Q), tab.Dims())
			}
		}
	})
}

func BenchmarkDotQ(b *testing.B) {
	tab, _ := Builtin()
	x, _ := tab.Lookup("song")
	y, _ := tab.Lookup("track")
	for b.Loop() {
		DotQ(x.Q, y.Q)
	}
}
