package capability

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCachedSchemas bounds the compiled schemas kept; when it is reached
// the cache starts again empty (the schemas of one import or one burst of
// registrations are what repeats).
const maxCachedSchemas = 4096

// maxCachedSchemaBytes bounds the encoded size of a schema worth caching:
// a larger one is compiled each time rather than pinned in memory.
const maxCachedSchemaBytes = 256 << 10

// compiled is a schema's compilation: the schema, or the issues that make
// it invalid. A compiled jsonschema.Schema is immutable and safe for
// concurrent validation.
type compiled struct {
	schema *jsonschema.Schema
	issues []SchemaIssue
}

// schemaCache keeps compiled schemas by the SHA-256 of their JSON
// encoding (encoding/json sorts object keys, so equal schemas encode
// alike).
type schemaCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]compiled
}

var compiledSchemas schemaCache

// schemaKey is s's cache key; ok is false when s is not to be cached (it
// does not encode, or is too large).
func schemaKey(s Schema) (key [sha256.Size]byte, ok bool) {
	b, err := json.Marshal(s)
	if err != nil || len(b) > maxCachedSchemaBytes {
		return key, false
	}
	return sha256.Sum256(b), true
}

func (c *schemaCache) get(k [sha256.Size]byte) (compiled, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *schemaCache) put(k [sha256.Size]byte, v compiled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedSchemas {
		c.m = make(map[[sha256.Size]byte]compiled)
	}
	c.m[k] = v
}
