package embed

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name, body string
		n, dims    int
		want       [][]float32
		err        string
	}{
		{name: "in order", body: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}],"model":"m"}`, n: 2, want: [][]float32{{1, 2}, {3, 4}}},
		{name: "by index", body: `{"object":"list","data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}`, n: 2, want: [][]float32{{1, 2}, {3, 4}}},
		{name: "without index", body: `{"data":[{"embedding":[1]},{"embedding":[2]}]}`, n: 2, want: [][]float32{{1}, {2}}},
		{name: "expected length", body: `{"data":[{"index":0,"embedding":[1,2,3]}]}`, n: 1, dims: 3, want: [][]float32{{1, 2, 3}}},
		{name: "too few", body: `{"data":[{"index":0,"embedding":[1]}]}`, n: 2, err: "1 vectors for 2 texts"},
		{name: "index out of range", body: `{"data":[{"index":5,"embedding":[1]}]}`, n: 1, err: "index 5, outside 0 to 0"},
		{name: "duplicate index", body: `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, n: 2, err: "two vectors for text 0"},
		{name: "empty vector", body: `{"data":[{"index":0,"embedding":[]}]}`, n: 1, err: "vector of text 0 is empty"},
		{name: "lengths differ", body: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]}]}`, n: 2, err: "1 dimensions, not the 2 expected"},
		{name: "wrong length", body: `{"data":[{"index":0,"embedding":[1,2]}]}`, n: 1, dims: 3, err: "2 dimensions, not the 3 expected"},
		{name: "not float32", body: `{"data":[{"index":0,"embedding":[1e39]}]}`, n: 1, err: "not an embeddings answer"},
		{name: "base64", body: `{"data":[{"index":0,"embedding":"AACAPw=="}]}`, n: 1, err: "not an embeddings answer"},
		{name: "not JSON", body: `<html>`, n: 1, err: "not an embeddings answer"},
		{name: "trailing", body: `{"data":[]} {}`, n: 0, err: "not an embeddings answer"},
	}
	for _, tt := range tests {
		got, err := parseAnswer([]byte(tt.body), tt.n, tt.dims)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v; want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if !equal(got[i], tt.want[i]) {
				t.Errorf("%s: vector %d = %v, want %v", tt.name, i, got[i], tt.want[i])
			}
		}
	}
	big := `{"data":[{"index":0,"embedding":[` + strings.Repeat("0,", MaxDimensions) + `0]}]}`
	if _, err := parseAnswer([]byte(big), 1, 0); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("a vector over MaxDimensions: err = %v", err)
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}],"model":"m"}`), 2, 0)
	f.Add([]byte(`{"data":[{"index":1,"embedding":[0.5]},{"embedding":[-0.25]}]}`), 2, 1)
	f.Add([]byte(`{"data":[{"index":-1,"embedding":[1e38]}]}`), 1, 0)
	f.Add([]byte(`{"error":{"message":"nope"}}`), 1, 0)
	f.Fuzz(func(t *testing.T, body []byte, n, dims int) {
		n, dims = n%64, dims%64
		if n < 0 || dims < 0 {
			return
		}
		got, err := parseAnswer(body, n, dims)
		if err != nil {
			return
		}
		if len(got) != n {
			t.Fatalf("%d vectors for %d texts", len(got), n)
		}
		for i, v := range got {
			if len(v) == 0 || len(v) != len(got[0]) || dims > 0 && len(v) != dims || len(v) > MaxDimensions {
				t.Fatalf("vector %d has %d dimensions (first %d, expected %d)", i, len(v), len(got[0]), dims)
			}
			for _, f := range v {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					t.Fatalf("vector %d holds %v", i, f)
				}
			}
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 10 ":                          10 * time.Second,
		"0":                             0,
		"-5":                            0,
		"999999999":                     24 * time.Hour,
		"Fri, 02 Jan 2026 03:04:35 GMT": 30 * time.Second,
		"Fri, 02 Jan 2026 03:00:00 GMT": 0,
		"soon":                          0,
	}
	for in, want := range tests {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestProviderMessage(t *testing.T) {
	tests := map[string]string{
		`{"error":{"message":"Rate limit reached","type":"requests"}}`: "Rate limit reached",
		`{"error":"model not loaded"}`:                                 "model not loaded",
		`{"message":"bad input"}`:                                      "bad input",
		`{"detail":"Not Found"}`:                                       "Not Found",
		"<html>\n<b>502</b>\x00 Bad\tGateway</html>":                   "<html> <b>502</b> Bad Gateway</html>",
		strings.Repeat("é", 400):                                       strings.Repeat("é", messageBytes/2) + "…",
	}
	for in, want := range tests {
		if got := providerMessage([]byte(in)); got != want {
			t.Errorf("providerMessage(%.40q) = %q, want %q", in, got, want)
		}
	}
}
