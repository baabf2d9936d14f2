package capability

import (
	"crypto/sha256"
	"encoding/json"
	"regexp"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCachedSchemaBytes bounds the encoded size of the schemas the cache
// keeps compiled, together; when the next would pass it, the cache starts
// again empty (the schemas of one import or one burst of registrations
// are what repeats). A larger schema than a tenth of it is compiled each
// time rather than pinned in memory.
const maxCachedSchemaBytes = 8 << 20

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
	mu    sync.Mutex
	m     map[[sha256.Size]byte]compiled
	bytes int // the encoded size of the schemas in m
}

var compiledSchemas schemaCache

// schemaKey is s's cache key, from enc (its encoding) when not nil; ok is
// false when s is not to be cached (it does not encode, or is too large).
func schemaKey(s Schema, enc []byte) (key schemaID, ok bool) {
	b := enc
	if b == nil {
		var err error
		if b, err = json.Marshal(s); err != nil {
			return key, false
		}
	}
	if len(b) > maxCachedSchemaBytes/10 {
		return key, false
	}
	return schemaID{sha256.Sum256(b), len(b)}, true
}

// schemaID identifies a schema: the digest and length of its encoding.
type schemaID struct {
	sum  [sha256.Size]byte
	size int
}

func (c *schemaCache) get(k schemaID) (compiled, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k.sum]
	return v, ok
}

func (c *schemaCache) put(k schemaID, v compiled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k.sum]; ok {
		return
	}
	if c.m == nil || c.bytes+k.size > maxCachedSchemaBytes {
		c.m, c.bytes = make(map[[sha256.Size]byte]compiled), 0
	}
	c.m[k.sum] = v
	c.bytes += k.size
}

// Bounds of the pattern cache: the patterns it keeps (it starts again
// empty when full), and the longest pattern it keeps.
const (
	maxCachedPatterns     = 4096
	maxCachedPatternBytes = 1024
)

// patternCache keeps the regular expressions of schemas ("pattern",
// "patternProperties") compiled, as the compiler's regexp engine: real
// specifications repeat a few patterns in thousands of schemas (Microsoft
// Graph's 11,422 operations), and the compiler compiles each twice, to
// check the schema and to compile it. A compiled *regexp.Regexp is safe
// for concurrent use.
type patternCache struct {
	mu sync.Mutex
	m  map[string]compiledPattern
}

type compiledPattern struct {
	re  *regexp.Regexp
	err error
}

var compiledPatterns patternCache

// compile is a jsonschema.RegexpEngine: regexp.Compile, cached.
func (c *patternCache) compile(s string) (jsonschema.Regexp, error) {
	if len(s) > maxCachedPatternBytes {
		return goRegexp(regexp.Compile(s))
	}
	c.mu.Lock()
	p, ok := c.m[s]
	c.mu.Unlock()
	if !ok {
		p.re, p.err = regexp.Compile(s)
		c.mu.Lock()
		if c.m == nil || len(c.m) >= maxCachedPatterns {
			c.m = make(map[string]compiledPattern)
		}
		c.m[s] = p
		c.mu.Unlock()
	}
	return goRegexp(p.re, p.err)
}

// goRegexp returns re as a jsonschema.Regexp: nil, not a nil
// *regexp.Regexp, with an error.
func goRegexp(re *regexp.Regexp, err error) (jsonschema.Regexp, error) {
	if err != nil {
		return nil, err
	}
	return re, nil
}
