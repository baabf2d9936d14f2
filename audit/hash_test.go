package audit

import (
	"testing"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// TestContentHashFinish checks that an event's hash started from its
// content before it is chained (hashContent) and finished once it is
// (finish) is its Hash, however often it is finished (a retried
// transaction chains the event again) and also on the path without a
// clonable SHA-256.
func TestContentHashFinish(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC)
	events := []chain.Event{
		{Kind: KindInvocation, Data: []byte(`{}`)},
		{Kind: KindRegistered, Actor: "alice", Capability: "ossa:security/scan@1.0", Data: []byte(`{"version":"1.0.3"}`)},
		{Kind: "k\u0000\"\\\n", Actor: "é€😀\u001f", Capability: "c\t", Data: []byte(`{"a":[1,"\u0001"]}`)},
	}
	for _, e := range events {
		c := hashContent(e)
		fallback := &contentHash{head: preimageHead(e)}
		for _, link := range []struct {
			seq  int64
			prev string
			at   time.Time
		}{{1, GenesisHash, at}, {42, "ab" + GenesisHash[2:], at.Add(time.Second)}, {1 << 40, GenesisHash, at.Truncate(time.Second)}} {
			e.Seq, e.PrevHash, e.Time = link.seq, link.prev, link.at
			want := Hash(e)
			for range 2 {
				if got := c.finish(e); got != want {
					t.Errorf("finish(%+v) = %s, want Hash %s", e, got, want)
				}
			}
			if got := fallback.finish(e); got != want {
				t.Errorf("finish without cloning (%+v) = %s, want Hash %s", e, got, want)
			}
		}
	}
}
