package embedtest_test

import (
	"math"
	"testing"

	"github.com/caphub/caphub/embed/embedtest"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestVector(t *testing.T) {
	s := embedtest.New(t, embedtest.Options{Dimensions: 128})
	v := s.Vector("Sends an email")
	if len(v) != 128 {
		t.Fatalf("%d dimensions, want 128", len(v))
	}
	var norm float64
	for _, f := range v {
		norm += float64(f) * float64(f)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("norm² %v, want 1", norm)
	}
	tests := []struct {
		a, b string
		near bool
	}{
		{"Sends an email", "send the emails", true},     // stop words, suffixes, case
		{"Sends an email", "mail", true},                // a concept
		{"searches repositories", "find a repo", true},  // plural -es, -ies, concepts
		{"Sends an email", "weather forecast", false},   // nothing shared
		{"resize image", "the forecast of rain", false}, // nothing shared
		{"!!!", "???", true},                            // no words: the same vector
	}
	for _, tt := range tests {
		sim := cosine(s.Vector(tt.a), s.Vector(tt.b))
		if tt.near && sim < 0.7 || !tt.near && sim > 0.3 {
			t.Errorf("similarity of %q and %q = %.3f; want near %v", tt.a, tt.b, sim, tt.near)
		}
	}
	again := embedtest.New(t, embedtest.Options{Dimensions: 128})
	if cosine(v, again.Vector("Sends an email")) < 0.99999 {
		t.Error("two servers give the same text different vectors")
	}
}
