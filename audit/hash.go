package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/caphub/caphub/audit/chain"
)

// GenesisHash is the PrevHash of the first event: 64 zeros.
var GenesisHash = strings.Repeat("0", 64)

// Preimage returns the bytes an event's Hash is the SHA-256 of. They are
// the RFC 8785 canonical JSON of an object of the event's fields other than
// Hash, with its members in the order RFC 8785 sorts them:
//
//	{"actor":A,"capability":C,"data":D,"kind":K,"prev_hash":P,"seq":N,"time":T}
//
// where A, C, K and P are the Actor, Capability, Kind and PrevHash as RFC
// 8785 strings (only '"', '\\' and U+0000–U+001F escaped: \b \t \n \f \r
// short, the others \u00xx; everything else as UTF-8); N is Seq in decimal
// (a JSON number, exact below 2^53); T is Time in UTC as an RFC 8785 string
// of time.RFC3339Nano, which drops trailing zeros of the fraction
// ("2025-01-02T03:04:05.12Z", or "2025-01-02T03:04:05Z" on a whole
// second); and D is Data exactly as stored — Append stores it in canonical
// form, so D is canonical JSON and the whole preimage is too. For example
// the first event of a chain:
//
//	{"actor":"alice","capability":"ossa:security/scan@1.0","data":{"version":"1.0.3"},"kind":"registered","prev_hash":"0000…0000","seq":1,"time":"2025-01-02T03:04:05.123456Z"}
//
// Anyone can check a chain with a JSON canonicaliser and SHA-256 alone:
// each Hash is hex(SHA-256(Preimage)), and each PrevHash the Hash before it.
func Preimage(e chain.Event) []byte {
	var b bytes.Buffer
	b.Grow(160 + len(e.Actor) + len(e.Capability) + len(e.Kind) + len(e.Data))
	writeHead(&b, e)
	writeTail(&b, e)
	return b.Bytes()
}

// writeHead writes the members of an event's Preimage that precede
// prev_hash: those of its content (actor, capability, data, kind), known
// before the event is chained.
func writeHead(b *bytes.Buffer, e chain.Event) {
	b.WriteString(`{"actor":`)
	writeString(b, e.Actor)
	b.WriteString(`,"capability":`)
	writeString(b, e.Capability)
	b.WriteString(`,"data":`)
	b.Write(e.Data)
	b.WriteString(`,"kind":`)
	writeString(b, e.Kind)
	b.WriteString(`,"prev_hash":`)
}

// writeTail writes the rest of an event's Preimage: what chaining the
// event sets (prev_hash, seq, time).
func writeTail(b *bytes.Buffer, e chain.Event) {
	writeString(b, e.PrevHash)
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.FormatInt(e.Seq, 10))
	b.WriteString(`,"time":`)
	writeString(b, e.Time.UTC().Format(time.RFC3339Nano))
	b.WriteByte('}')
}

// Hash returns the hex SHA-256 of the event's Preimage: what its Hash must
// be. It ignores e.Hash.
func Hash(e chain.Event) string {
	sum := sha256.Sum256(Preimage(e))
	return hex.EncodeToString(sum[:])
}

// contentHash is an event's Hash half done: the SHA-256 state after the
// head of its Preimage (its content), computed before the event is
// chained, so that the append transaction, which holds the chain's lock,
// hashes only the tail (prev_hash, seq, time).
type contentHash struct {
	h    hash.Cloner // nil where SHA-256 cannot be cloned (GOFIPS140=v1.0.0)
	head []byte      // the head, when h is nil
}

// hashContent starts the Hash of e from its content.
func hashContent(e chain.Event) *contentHash {
	head := preimageHead(e)
	if h, ok := sha256.New().(hash.Cloner); ok {
		h.Write(head)
		return &contentHash{h: h}
	}
	return &contentHash{head: head}
}

// preimageHead returns the head of e's Preimage (writeHead).
func preimageHead(e chain.Event) []byte {
	var b bytes.Buffer
	b.Grow(64 + len(e.Actor) + len(e.Capability) + len(e.Kind) + len(e.Data))
	writeHead(&b, e)
	return b.Bytes()
}

// finish returns the Hash of e, whose content must be the one c was made
// from: Hash(e), with only the tail left to hash. c can finish e again
// (a retried transaction chains it anew).
func (c *contentHash) finish(e chain.Event) string {
	var h hash.Hash
	if c.h != nil {
		if cl, err := c.h.Clone(); err == nil {
			h = cl
		}
	}
	if h == nil {
		if c.head == nil {
			return Hash(e)
		}
		h = sha256.New()
		h.Write(c.head)
	}
	var b bytes.Buffer
	b.Grow(128)
	writeTail(&b, e)
	h.Write(b.Bytes())
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}
