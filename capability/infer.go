package capability

import "strings"

// Domain and category inference, exactly as CCOS does it (the rules are
// written down in corpus/ccos/INFERENCE.md and come from CCOS's
// CapabilityManifest::infer_domains and infer_category). Imported tools that
// declare no domains or categories get the same ones CCOS would give them, so
// that a domain filter finds the same capabilities in caphub as in CCOS.
//
// The rules are crude on purpose and several of their results are surprising;
// each such result is marked "CCOS quirk" below and is kept, not fixed,
// because agreeing with CCOS matters more here than being clever.

// Inference is the result of Infer.
type Inference struct {
	Domains    []string // [primary] or [primary, primary.sub]
	Categories []string // e.g. [crud.read, search]; ["other"] when nothing matched
}

// inferSourceSuffixes are stripped from the end of a source name. Only the
// first one, in this order, that the name ends with is stripped, and only at
// the end: "acme-api-server" becomes "acme-api", not "acme". (The CCOS code
// at hand removes every occurrence of every suffix with String::replace;
// INFERENCE.md says "strip the first matching suffix", and that is what is
// implemented. The two differ only for names that hold a suffix elsewhere
// too, or several stacked: "acme-api-server" is "acme" in that code.)
var inferSourceSuffixes = []string{
	"-mcp-server", "_mcp_server",
	"-server", "_server",
	"-mcp", "_mcp",
	"-bot", "_bot",
	"-api", "_api",
}

// inferDomainTable maps substrings of the cleaned source name to a primary
// domain. The first row with any substring contained in the name wins.
//
// CCOS quirk: these are plain substring tests, so short keys match inside
// unrelated words: "gh" makes "high-scores" and "weights" github, "db" makes
// "feedback" database, "fs" makes "offsets" filesystem, "web" makes
// "webhooks" web. And the order decides overlaps: "google-calendar" is
// cloud.gcp, not calendar; "gmail" is email but "google-mail" is cloud.gcp.
var inferDomainTable = []struct {
	substrings []string
	domain     string
}{
	{[]string{"github", "gh"}, "github"},
	{[]string{"slack"}, "slack"},
	{[]string{"discord"}, "discord"},
	{[]string{"jira"}, "jira"},
	{[]string{"confluence"}, "confluence"},
	{[]string{"notion"}, "notion"},
	{[]string{"linear"}, "linear"},
	{[]string{"aws", "amazon"}, "cloud.aws"},
	{[]string{"gcp", "google"}, "cloud.gcp"},
	{[]string{"azure"}, "cloud.azure"},
	{[]string{"postgres", "mysql", "sqlite", "database", "db"}, "database"},
	{[]string{"file", "filesystem", "fs"}, "filesystem"},
	{[]string{"http", "fetch", "web"}, "web"},
	{[]string{"email", "mail", "smtp"}, "email"},
	{[]string{"calendar", "gcal"}, "calendar"},
}

// PrimaryDomain returns the primary domain of a source: a server, registry or
// spec name such as "modelcontextprotocol/github", "github/github-mcp" or
// "aws-s3-server".
//
// The source is lower-cased and cut after its last "/"; the first matching
// suffix of inferSourceSuffixes is stripped; the first row of the domain table
// with a substring in what is left gives the domain; with none, the domain is
// what is left with "-" and "_" replaced by ".". An empty source, or one that
// ends in "/" (such as a server URL "https://host/mcp/"), gives "".
func PrimaryDomain(source string) string {
	name := strings.ToLower(source)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	for _, suffix := range inferSourceSuffixes {
		if strings.HasSuffix(name, suffix) {
			name = strings.TrimSuffix(name, suffix)
			break
		}
	}
	for _, row := range inferDomainTable {
		for _, s := range row.substrings {
			if strings.Contains(name, s) {
				return row.domain
			}
		}
	}
	return strings.NewReplacer("-", ".", "_", ".").Replace(name)
}

// inferActionPrefixes are the verbs stripped from a capability name to find
// the resource it acts on. The first that matches, in this order, is stripped.
//
// CCOS quirk: "get_" comes before "get_all_", so "get_all_" can never match
// and "get_all_users" has the sub-domain "all.users", not "users".
var inferActionPrefixes = []string{
	"list_", "get_", "get_all_", "create_", "add_", "update_", "edit_",
	"delete_", "remove_", "search_", "find_", "read_", "write_", "send_",
	"post_", "fetch_", "download_", "upload_",
}

// inferResourceNames normalises a resource (the name without its action
// prefix) to the plural CCOS uses as sub-domain. A resource is looked up
// whole, never word by word.
var inferResourceNames = map[string]string{
	"issue":        "issues",
	"pr":           "pull_requests",
	"pull_request": "pull_requests",
	"repo":         "repos",
	"repository":   "repos",
	"dir":          "directories",
	"directory":    "directories",
	"folder":       "directories",
	"message":      "messages",
	"msg":          "messages",
	"file":         "files",
	"files":        "files",
	// The singulars that "take an s". "branch" is made "branches", the
	// real plural, as CCOS writes it (INFERENCE.md's "take an s" is a
	// summary: "branchs" is not what CCOS produces).
	"branch":    "branches",
	"commit":    "commits",
	"channel":   "channels",
	"user":      "users",
	"team":      "teams",
	"workflow":  "workflows",
	"action":    "actions",
	"release":   "releases",
	"tag":       "tags",
	"comment":   "comments",
	"review":    "reviews",
	"label":     "labels",
	"milestone": "milestones",
}

// SubDomain returns the sub-domain of a capability (tool) name: the resource
// it acts on, or "" when the name starts with none of the action prefixes.
//
// The name is lower-cased first, as CCOS does (INFERENCE.md does not say;
// CCOS's code does, so "List_Issues" gives "issues" like "list_issues").
// The first matching action prefix is stripped and the rest is normalised
// through inferResourceNames as a whole; anything not in that table keeps its
// text with "_" replaced by ".". A name that is only a prefix ("list_") has
// no sub-domain: CCOS would produce the malformed domain "primary.".
//
// CCOS quirk: because the lookup is on the whole rest, only a bare resource
// is normalised: "get_pull_request" gives "pull_requests" but
// "list_pull_requests" gives "pull.requests", "get_issue" gives "issues" but
// "get_issue_comments" gives "issue.comments", and "search_repositories"
// keeps "repositories" while "create_repository" gives "repos".
func SubDomain(name string) string {
	lower := strings.ToLower(name)
	for _, prefix := range inferActionPrefixes {
		rest, ok := strings.CutPrefix(lower, prefix)
		if !ok {
			continue
		}
		if rest == "" {
			return ""
		}
		if n, ok := inferResourceNames[rest]; ok {
			return n
		}
		return strings.ReplaceAll(rest, "_", ".")
	}
	return ""
}

// inferCRUDBuckets gives each CRUD category the name prefixes that put a
// capability in it. A capability is in at most one: the first that matches.
//
// CCOS quirk: "write_", "send_", "search_", "find_" and "upload_" are action
// prefixes for the sub-domain but in no CRUD bucket, so "write_file" is
// "other"; "new_", "modify_", "patch_" and "drop_" are CRUD prefixes but give
// no sub-domain.
var inferCRUDBuckets = []struct {
	category string
	prefixes []string
}{
	{"crud.read", []string{"list_", "get_", "read_", "fetch_", "download_"}},
	{"crud.create", []string{"create_", "add_", "new_", "post_"}},
	{"crud.update", []string{"update_", "edit_", "modify_", "patch_"}},
	{"crud.delete", []string{"delete_", "remove_", "drop_"}},
}

// inferExtraCategories are added after the CRUD bucket, each one whose
// prefixes start the name or whose infixes occur in it, in this order.
//
// CCOS quirk: the infixes are plain substring tests, so "list_messages" is
// notify as well as crud.read, and "post_message" is crud.create and notify.
var inferExtraCategories = []struct {
	category string
	prefixes []string
	infixes  []string
}{
	{"search", []string{"search_", "find_"}, []string{"_search"}},
	{"notify", []string{"send_", "notify_"}, []string{"_message"}},
	{"transform", []string{"transform_", "convert_", "format_"}, nil},
	{"validate", []string{"validate_", "check_", "verify_"}, nil},
	{"upload", []string{"upload_"}, []string{"_upload"}},
}

// InferCategories returns the categories of a capability (tool) name: at most
// one CRUD bucket (crud.read, crud.create, crud.update or crud.delete), then
// each of search, notify, transform, validate and upload that applies, or
// ["other"] when none does. The name is lower-cased first, as in SubDomain.
func InferCategories(name string) []string {
	lower := strings.ToLower(name)
	var out []string
	for _, b := range inferCRUDBuckets {
		if inferHasAnyPrefix(lower, b.prefixes) {
			out = append(out, b.category)
			break
		}
	}
	for _, c := range inferExtraCategories {
		if inferHasAnyPrefix(lower, c.prefixes) || inferContainsAny(lower, c.infixes) {
			out = append(out, c.category)
		}
	}
	if len(out) == 0 {
		out = []string{"other"}
	}
	return out
}

func inferHasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func inferContainsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Infer derives hierarchical domains and categories from a source (server or
// spec name, e.g. "modelcontextprotocol/github", "aws-s3-server") and a
// capability (tool) name, per the CCOS rules: Domains is [primary] or
// [primary, primary.sub] (see PrimaryDomain and SubDomain), Categories is
// InferCategories(name).
//
// When the source gives no primary domain (empty source), Domains is [sub]
// alone, or nil when there is no sub-domain either, as in CCOS.
func Infer(source, name string) Inference {
	primary, sub := PrimaryDomain(source), SubDomain(name)
	var domains []string
	switch {
	case primary != "" && sub != "":
		domains = []string{primary, primary + "." + sub}
	case primary != "":
		domains = []string{primary}
	case sub != "":
		domains = []string{sub}
	}
	return Inference{Domains: domains, Categories: InferCategories(name)}
}

// DomainMatches reports whether a filter domain matches a capability domain:
// they are equal, or one is a dotted prefix of the other. "github" matches
// "github.issues" and "github.issues" matches "github" (a filter asking for
// the sub-domain still finds a capability tagged only with its parent), but
// "git" does not match "github". The comparison is exact and case-sensitive
// (inferred domains are lower case). An empty filter is not a wildcard:
// callers wanting "no filter" must not call it.
func DomainMatches(filter, domain string) bool {
	return filter == domain ||
		strings.HasPrefix(domain, filter+".") ||
		strings.HasPrefix(filter, domain+".")
}

// ApplyInference fills d.Domains and d.Categories, each only when it is empty,
// so that declared ones are never overwritten.
//
// The capability name is d.Name, or, for an mcp: URI, the upstream tool name
// of its MCP binding (the rules are about tool names). The source is the
// source argument, else the MCP binding's server, else d.Domain; the registry
// passes the declared domain for ossa: capabilities, so that their
// hierarchical domains start with it.
func (d *Definition) ApplyInference(source string) {
	name := d.Name
	m := d.Bindings.MCP
	if m != nil && m.Tool != "" && strings.HasPrefix(d.URI, SchemeMCP+":") {
		name = m.Tool // an MCP tool keeps its upstream name, which CCOS infers from
	}
	if source == "" && m != nil {
		source = m.Server
	}
	if source == "" {
		source = d.Domain
	}
	inf := Infer(source, name)
	if len(d.Domains) == 0 {
		d.Domains = inf.Domains
	}
	if len(d.Categories) == 0 {
		d.Categories = inf.Categories
	}
}
