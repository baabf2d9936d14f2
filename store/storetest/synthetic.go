package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
)

// NewRecord returns the record the registry would store for d: its key (the
// scheme from d.URI, "ossa" when the URI does not parse; d's domain, name and
// full version) and a SHA-256 digest of its JSON encoding.
func NewRecord(d capability.Definition) registry.Record {
	scheme := capability.SchemeOSSA
	if u, err := capability.ParseURI(d.URI); err == nil {
		scheme = u.Scheme
	}
	version := d.Version
	if v, err := capability.ParseVersion(d.Version); err == nil {
		version = v.Full()
	}
	return registry.Record{
		Key:        registry.Key{Scheme: scheme, Domain: d.Domain, Name: d.Name, Version: version},
		Definition: d,
		Digest:     Digest(d),
	}
}

// Digest returns the hex SHA-256 of d's JSON encoding, the way the service
// computes content digests.
func Digest(d capability.Definition) string {
	b, err := json.Marshal(d)
	if err != nil {
		// Only a value json cannot encode (a channel, a NaN) gets here; a
		// digest of the error still differs from any real one.
		b = []byte("unencodable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// syntheticDomains are the ~50 domains Synthetic spreads capabilities over.
var syntheticDomains = []string{
	"analytics", "auth", "billing", "blob", "browser", "calendar", "chat", "ci", "cloud", "code",
	"compute", "contacts", "crm", "database", "dns", "docs", "email", "finance", "filesystem", "geo",
	"git", "github", "gitlab", "graphics", "hr", "images", "inventory", "issues", "jira", "k8s",
	"logging", "maps", "math", "media", "memory", "messaging", "metrics", "network", "notes", "payments",
	"pdf", "queue", "search", "security", "sheets", "slack", "speech", "storage", "translate", "weather",
}

var (
	syntheticVerbs = []string{"get", "list", "create", "update", "delete", "search", "scan", "send", "read", "write",
		"sync", "export", "import", "summarize", "translate", "convert", "validate", "archive", "restore", "watch"}
	syntheticNouns = []string{"item", "record", "file", "message", "issue", "user", "report", "event", "invoice", "image",
		"document", "repository", "ticket", "contact", "metric", "alert", "job", "table", "folder", "comment"}
	syntheticWords = []string{"fast", "secure", "batch", "remote", "local", "cached", "streaming", "paginated", "encrypted",
		"versioned", "shared", "private", "public", "scheduled", "incremental", "full", "partial", "signed", "compressed", "indexed",
		"vulnerability", "latency", "quota", "region", "tenant", "webhook", "schema", "payload", "token", "session"}
	syntheticSources  = []string{"", "mcp_introspection", "openapi", "manual", "rtfs"}
	syntheticStatuses = []string{capability.StabilityStable, capability.StabilityStable, capability.StabilityBeta, capability.StabilityExperimental}
	syntheticCats     = []string{"crud.read", "crud.create", "crud.update", "crud.delete", "search", "transform", "messaging.send", "automation.run"}
)

// Synthetic returns n valid capability definitions generated from seed: the
// same n and seed give the same definitions. They spread over 50 domains,
// with one to five versions per capability (including pre-releases), varied
// names, titles, descriptions, keywords, intents, categories, bindings
// (native, mcp, http, cli, grpc, delegation) and provenance, for benchmarks
// and load tests of a Store.
func Synthetic(n int, seed int64) []capability.Definition {
	if n <= 0 {
		return nil
	}
	r := rand.New(rand.NewSource(seed))
	pick := func(list []string) string { return list[r.Intn(len(list))] }
	out := make([]capability.Definition, 0, n)
	for c := 0; len(out) < n; c++ {
		domain := syntheticDomains[c%len(syntheticDomains)]
		verb, noun := pick(syntheticVerbs), pick(syntheticNouns)
		name := fmt.Sprintf("%s_%s_%d", verb, noun, c)
		sub := domain + "." + noun + "s"
		versions := 1 + r.Intn(5)
		major, minor, patch := r.Intn(3), r.Intn(12), 0
		maxLimit := int64(100 + r.Intn(900)) // fixed per capability, so versions differ only in documentation
		for v := 0; v < versions && len(out) < n; v++ {
			version := fmt.Sprintf("%d.%d.%d", major, minor, patch)
			if r.Intn(6) == 0 {
				version += fmt.Sprintf("-%s.%d", pick([]string{"alpha", "beta", "rc"}), 1+r.Intn(11))
			}
			ver := capability.MustParseVersion(version)
			w1, w2, w3 := pick(syntheticWords), pick(syntheticWords), pick(syntheticWords)
			d := capability.Definition{
				URI:     capability.NewURI(capability.SchemeOSSA, domain, name, ver).String(),
				Name:    name,
				Domain:  domain,
				Version: version,
				Title:   fmt.Sprintf("%s %s (%s)", verb, noun, domain),
				Description: fmt.Sprintf("%s the %s %s of a %s account, with %s and %s support. Version %s of capability %d.",
					verb, w1, noun, domain, w2, w3, version, c),
				Stability: pick(syntheticStatuses),
				Input: capability.Schema{
					"type":     "object",
					"required": []any{"id"},
					"properties": map[string]any{
						"id":    map[string]any{"type": "string", "description": "the " + noun + " id"},
						"limit": map[string]any{"type": "integer", "minimum": int64(1), "maximum": maxLimit},
					},
				},
				Output:     capability.Schema{"type": "object", "properties": map[string]any{noun: map[string]any{"type": "object"}}},
				Domains:    []string{domain, sub},
				Categories: []string{pick(syntheticCats)},
				Intents:    []string{domain + "." + verb + "_" + noun},
				Keywords:   []string{verb, noun, w1},
				Effects:    []string{"network_request"},
			}
			switch c % 6 {
			case 0:
				d.Bindings.MCP = &capability.MCPBinding{Server: domain, Tool: name}
			case 1:
				d.Bindings.HTTP = &capability.HTTPBinding{Method: "POST", URL: "https://" + domain + ".example.com/" + noun}
			case 2:
				d.Bindings.CLI = &capability.CLIBinding{Command: domain + " " + verb + " {id}", Parser: "json"}
			case 3:
				d.Bindings.GRPC = &capability.GRPCBinding{Target: domain + ":443", Service: domain + ".v1.Service", Method: verb}
			case 4:
				d.Bindings.Native = &capability.NativeBinding{Handler: name}
			default:
				d.Bindings.Delegation = &capability.DelegationBinding{Agent: domain + "-agent", Capability: "ossa:" + domain + "/" + name + "@1.0"}
			}
			if src := pick(syntheticSources); src != "" {
				d.Provenance = &capability.Provenance{Method: src, SourceURL: "https://" + domain + ".example.com"}
			}
			out = append(out, d)
			patch += 1 + r.Intn(2)
			if r.Intn(3) == 0 {
				minor, patch = minor+1, 0
			}
		}
	}
	return out
}

// SearchQuery is one query of the benchmarks' search mix over a Synthetic
// catalog: a word, two words or a phrase, as agents write them.
func SearchQuery(r *rand.Rand) string {
	q := searchWords[r.Intn(len(searchWords))]
	switch r.Intn(3) {
	case 0:
		q += " " + searchWords[r.Intn(len(searchWords))]
	case 1:
		q = searchPhrases[r.Intn(len(searchPhrases))]
	}
	return q
}

// SearchQueries is every word and phrase of the mix, each on its own.
func SearchQueries() []string {
	return append(append([]string(nil), searchWords...), searchPhrases...)
}

var (
	searchWords   = []string{"scan", "invoice", "message", "secure", "repository", "export", "ticket", "streaming", "quota", "webhook", "vulnerability", "calendar", "report", "tenant", "archive"}
	searchPhrases = []string{"open a new ticket for a customer", "who am I", "send a message to the team", "list the invoices of last month", "scan my repository for vulnerabilities"}
)

// Renamed is d under another name and version: its URI, and the tool of its
// mcp binding (which caphub requires to be the capability's name), follow
// them. Benchmarks register new capabilities and versions of Synthetic's so.
func Renamed(d capability.Definition, name, version string) capability.Definition {
	d.Name, d.Version = name, version
	d.URI = capability.NewURI(capability.SchemeOSSA, d.Domain, d.Name, capability.MustParseVersion(d.Version)).String()
	if d.Bindings.MCP != nil {
		m := *d.Bindings.MCP
		m.Tool = d.Name
		d.Bindings.MCP = &m
	}
	return d
}
