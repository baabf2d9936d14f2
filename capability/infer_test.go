package capability

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The tables below follow INFERENCE.md row by row, so that a change to any
// rule breaks exactly the cases that name it.

func TestPrimaryDomainSuffixes(t *testing.T) {
	// One case per suffix, in the order of INFERENCE.md. "acme" is in no
	// row of the domain table, so the fallback shows what was stripped.
	tests := []struct{ source, want string }{
		{"acme-mcp-server", "acme"},
		{"acme_mcp_server", "acme"},
		{"acme-server", "acme"},
		{"acme_server", "acme"},
		{"acme-mcp", "acme"},
		{"acme_mcp", "acme"},
		{"acme-bot", "acme"},
		{"acme_bot", "acme"},
		{"acme-api", "acme"},
		{"acme_api", "acme"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			if got := PrimaryDomain(tt.source); got != tt.want {
				t.Errorf("PrimaryDomain(%q) = %q, want %q", tt.source, got, tt.want)
			}
		})
	}
}

func TestPrimaryDomainTable(t *testing.T) {
	// One case per substring of every row, each source containing no
	// substring of an earlier row, then the fallback row.
	tests := []struct{ source, want string }{
		{"github", "github"},
		{"gh", "github"},
		{"slack", "slack"},
		{"discord", "discord"},
		{"jira", "jira"},
		{"confluence", "confluence"},
		{"notion", "notion"},
		{"linear", "linear"},
		{"aws", "cloud.aws"},
		{"amazon", "cloud.aws"},
		{"gcp", "cloud.gcp"},
		{"google", "cloud.gcp"},
		{"azure", "cloud.azure"},
		{"postgres", "database"},
		{"mysql", "database"},
		{"sqlite", "database"},
		{"database", "database"},
		{"mongodb", "database"}, // "db"
		{"file", "filesystem"},
		{"filesystem", "filesystem"},
		{"nfs", "filesystem"}, // "fs"
		{"http", "web"},
		{"fetch", "web"},
		{"web", "web"},
		{"email", "email"},
		{"mailgun", "email"}, // "mail"
		{"smtp", "email"},
		{"calendar", "calendar"},
		{"gcal", "calendar"},
		// none: "-" and "_" become "."
		{"weather-service_v2", "weather.service.v2"},
		{"acme", "acme"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			if got := PrimaryDomain(tt.source); got != tt.want {
				t.Errorf("PrimaryDomain(%q) = %q, want %q", tt.source, got, tt.want)
			}
		})
	}
}

func TestPrimaryDomainSteps(t *testing.T) {
	tests := []struct{ name, source, want string }{
		// Step 1: lower-case, keep the part after the last "/".
		{"lower-case", "GitHub", "github"},
		{"lower-case fallback", "Acme_Tools", "acme.tools"},
		{"namespace", "modelcontextprotocol/github", "github"},
		{"namespace and suffix", "github/github-mcp", "github"},
		{"last slash only", "org/acme-api/tools", "tools"},
		{"upper-case namespace", "ModelContextProtocol/Slack-Bot", "slack"},
		{"trailing slash gives nothing", "https://api.githubcopilot.com/mcp/", ""},
		{"url without trailing slash", "https://api.githubcopilot.com/mcp", "mcp"},
		{"empty", "", ""},
		// Step 2: only the first matching suffix, only at the end.
		{"-mcp-server before -server", "acme-mcp-server", "acme"},
		{"one suffix only", "acme-api-server", "acme.api"},
		{"one suffix only, other order", "acme-server-mcp", "acme.server"},
		{"not in the middle", "acme-api-tools", "acme.api.tools"},
		{"not at the start", "mcp-server-acme", "mcp.server.acme"},
		{"mixed separators", "acme_mcp-server", "acme.mcp"},
		{"suffix only", "-server", ""},
		// Step 3: the first row with a substring wins.
		{"CCOS example", "aws-s3-server", "cloud.aws"},
		{"CCOS doc example", "my-slack-bot", "slack"},
		{"suffix stripped before matching", "github-mcp-server", "github"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrimaryDomain(tt.source); got != tt.want {
				t.Errorf("%s: PrimaryDomain(%q) = %q, want %q", tt.name, tt.source, got, tt.want)
			}
		})
	}
}

func TestPrimaryDomainQuirks(t *testing.T) {
	// CCOS quirks kept on purpose: plain substring tests in table order.
	tests := []struct{ source, want string }{
		{"high-scores", "github"}, // "gh" inside "high"
		{"weights", "github"},     // "gh" inside "weights"
		{"aws-highlights", "github"},
		{"feedback", "database"}, // "db" inside "feedback"
		{"offsets", "filesystem"},
		{"webhooks", "web"},
		{"google-calendar", "cloud.gcp"}, // gcp row comes before calendar
		{"google-mail", "cloud.gcp"},
		{"gmail", "email"},
		{"sqlite-files", "database"}, // database row before filesystem
		{"file-fetcher", "filesystem"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			if got := PrimaryDomain(tt.source); got != tt.want {
				t.Errorf("PrimaryDomain(%q) = %q, want %q", tt.source, got, tt.want)
			}
		})
	}
}

func TestSubDomainPrefixes(t *testing.T) {
	// One case per action prefix, in the order of INFERENCE.md, with a
	// resource the normalisation table does not know.
	tests := []struct{ name, want string }{
		{"list_widget", "widget"},
		{"get_widget", "widget"},
		{"get_all_widget", "all.widget"}, // quirk: get_ is tried first
		{"create_widget", "widget"},
		{"add_widget", "widget"},
		{"update_widget", "widget"},
		{"edit_widget", "widget"},
		{"delete_widget", "widget"},
		{"remove_widget", "widget"},
		{"search_widget", "widget"},
		{"find_widget", "widget"},
		{"read_widget", "widget"},
		{"write_widget", "widget"},
		{"send_widget", "widget"},
		{"post_widget", "widget"},
		{"fetch_widget", "widget"},
		{"download_widget", "widget"},
		{"upload_widget", "widget"},
		// No prefix matched: no sub-domain.
		{"widget", ""},
		{"assign_widget", ""},
		{"x_list_widget", ""},
		{"listwidget", ""},
		{"", ""},
		// CRUD-only prefixes are not action prefixes.
		{"new_widget", ""},
		{"modify_widget", ""},
		{"patch_widget", ""},
		{"drop_widget", ""},
		// Only the first prefix is stripped.
		{"list_get_widget", "get.widget"},
		// A bare prefix gives no sub-domain (CCOS would give "primary.").
		{"list_", ""},
		// The name is lower-cased first.
		{"List_Issues", "issues"},
		{"GET_WIDGET_NAME", "widget.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SubDomain(tt.name); got != tt.want {
				t.Errorf("SubDomain(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestSubDomainNormalisation(t *testing.T) {
	tests := []struct{ name, want string }{
		{"get_issue", "issues"},
		{"get_pr", "pull_requests"},
		{"get_pull_request", "pull_requests"},
		{"get_repo", "repos"},
		{"get_repository", "repos"},
		{"list_dir", "directories"},
		{"list_directory", "directories"},
		{"list_folder", "directories"},
		{"send_message", "messages"},
		{"send_msg", "messages"},
		{"read_file", "files"},
		{"read_files", "files"},
		// The singulars that take an s.
		{"get_branch", "branches"},
		{"get_commit", "commits"},
		{"get_channel", "channels"},
		{"get_user", "users"},
		{"get_team", "teams"},
		{"get_workflow", "workflows"},
		{"get_action", "actions"},
		{"get_release", "releases"},
		{"get_tag", "tags"},
		{"get_comment", "comments"},
		{"get_review", "reviews"},
		{"get_label", "labels"},
		{"get_milestone", "milestones"},
		// Anything else keeps its text with "_" replaced by ".".
		{"list_issues", "issues"},
		{"get_me", "me"},
		{"get_file_contents", "file.contents"},
		// Quirk: the whole rest is looked up, never word by word.
		{"list_pull_requests", "pull.requests"},
		{"get_issue_comments", "issue.comments"},
		{"get_branch_protection", "branch.protection"},
		{"create_pull_request_review", "pull.request.review"},
		{"search_repositories", "repositories"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SubDomain(tt.name); got != tt.want {
				t.Errorf("SubDomain(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestInferCategories(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		// One case per CRUD bucket prefix.
		{"list_widget", []string{"crud.read"}},
		{"get_widget", []string{"crud.read"}},
		{"read_widget", []string{"crud.read"}},
		{"fetch_widget", []string{"crud.read"}},
		{"download_widget", []string{"crud.read"}},
		{"create_widget", []string{"crud.create"}},
		{"add_widget", []string{"crud.create"}},
		{"new_widget", []string{"crud.create"}},
		{"post_widget", []string{"crud.create"}},
		{"update_widget", []string{"crud.update"}},
		{"edit_widget", []string{"crud.update"}},
		{"modify_widget", []string{"crud.update"}},
		{"patch_widget", []string{"crud.update"}},
		{"delete_widget", []string{"crud.delete"}},
		{"remove_widget", []string{"crud.delete"}},
		{"drop_widget", []string{"crud.delete"}},
		// Exactly one bucket: the name's own prefix, not a later verb.
		{"list_create_widget", []string{"crud.read"}},
		{"create_or_update_widget", []string{"crud.create"}},
		// One case per trigger of each additional category.
		{"search_widget", []string{"search"}},
		{"find_widget", []string{"search"}},
		{"widget_search", []string{"search"}},
		{"send_widget", []string{"notify"}},
		{"notify_widget", []string{"notify"}},
		{"widget_message", []string{"notify"}},
		{"transform_widget", []string{"transform"}},
		{"convert_widget", []string{"transform"}},
		{"format_widget", []string{"transform"}},
		{"validate_widget", []string{"validate"}},
		{"check_widget", []string{"validate"}},
		{"verify_widget", []string{"validate"}},
		{"upload_widget", []string{"upload"}},
		{"widget_upload", []string{"upload"}},
		// The CRUD bucket first, then the additional ones in order.
		{"list_search_results", []string{"crud.read", "search"}},
		{"post_message", []string{"crud.create", "notify"}},
		{"create_upload", []string{"crud.create", "upload"}},
		{"find_message_upload", []string{"search", "notify", "upload"}},
		{"get_message_search_upload", []string{"crud.read", "search", "notify", "upload"}},
		{"format_message_search", []string{"search", "notify", "transform"}},
		{"check_upload", []string{"validate", "upload"}},
		// A category is added once even when several triggers match.
		{"send_message", []string{"notify"}},
		{"search_widget_search", []string{"search"}},
		// Quirks: substring triggers; action prefixes without a bucket.
		{"list_messages", []string{"crud.read", "notify"}},
		{"write_file", []string{"other"}},
		// Nothing matched.
		{"assign_widget", []string{"other"}},
		{"issue_read", []string{"other"}},
		{"widget", []string{"other"}},
		{"", []string{"other"}},
		{"searchwidget", []string{"other"}},
		// The name is lower-cased first.
		{"Send_Message", []string{"notify"}},
		{"LIST_WIDGET_SEARCH", []string{"crud.read", "search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InferCategories(tt.name); !slices.Equal(got, tt.want) {
				t.Errorf("InferCategories(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestInferExamples(t *testing.T) {
	// The Examples section of INFERENCE.md.
	got := Infer("modelcontextprotocol/github", "list_issues")
	if want := []string{"github", "github.issues"}; !slices.Equal(got.Domains, want) {
		t.Errorf("domains = %q, want %q", got.Domains, want)
	}
	if want := []string{"crud.read"}; !slices.Equal(got.Categories, want) {
		t.Errorf("categories = %q, want %q", got.Categories, want)
	}
	if got := PrimaryDomain("aws-s3-server"); got != "cloud.aws" {
		t.Errorf("PrimaryDomain(aws-s3-server) = %q, want cloud.aws", got)
	}
	if got := SubDomain("send_message"); got != "messages" {
		t.Errorf("SubDomain(send_message) = %q, want messages", got)
	}
	if got, want := InferCategories("send_message"), []string{"notify"}; !slices.Equal(got, want) {
		t.Errorf("InferCategories(send_message) = %q, want %q", got, want)
	}
	if got := SubDomain("search_repositories"); got != "repositories" {
		t.Errorf("SubDomain(search_repositories) = %q, want repositories", got)
	}
	if got, want := InferCategories("search_repositories"), []string{"search"}; !slices.Equal(got, want) {
		t.Errorf("InferCategories(search_repositories) = %q, want %q", got, want)
	}
}

func TestInfer(t *testing.T) {
	tests := []struct {
		source, name string
		want         Inference
	}{
		{"modelcontextprotocol/github", "get_pull_request",
			Inference{[]string{"github", "github.pull_requests"}, []string{"crud.read"}}},
		{"slack", "send_message",
			Inference{[]string{"slack", "slack.messages"}, []string{"notify"}}},
		{"aws-s3-server", "upload_object",
			Inference{[]string{"cloud.aws", "cloud.aws.object"}, []string{"upload"}}},
		{"github", "assign_copilot_to_issue",
			Inference{[]string{"github"}, []string{"other"}}},
		{"acme-tools", "get_all_users",
			Inference{[]string{"acme.tools", "acme.tools.all.users"}, []string{"crud.read"}}},
		// No primary domain: the sub-domain alone, as in CCOS.
		{"", "list_issues", Inference{[]string{"issues"}, []string{"crud.read"}}},
		{"", "assign_widget", Inference{nil, []string{"other"}}},
	}
	for _, tt := range tests {
		t.Run(tt.source+"/"+tt.name, func(t *testing.T) {
			got := Infer(tt.source, tt.name)
			if !slices.Equal(got.Domains, tt.want.Domains) || !slices.Equal(got.Categories, tt.want.Categories) {
				t.Errorf("Infer(%q, %q) = %+v, want %+v", tt.source, tt.name, got, tt.want)
			}
		})
	}
}

func TestDomainMatches(t *testing.T) {
	tests := []struct {
		filter, domain string
		want           bool
	}{
		{"github", "github", true},
		{"github", "github.issues", true},
		{"github.issues", "github", true},
		{"cloud", "cloud.aws", true},
		{"cloud.aws", "cloud", true},
		{"cloud", "cloud.aws.s3", true},
		{"cloud.aws.s3", "cloud", true},
		{"github.issues", "github.issues", true},
		// Negative cases, both ways.
		{"git", "github", false},
		{"github", "git", false},
		{"github", "github-issues", false},
		{"github-issues", "github", false},
		{"github.issues", "github.pulls", false},
		{"cloud.aws", "cloud.azure", false},
		{"cloud.azure", "cloud.aws", false},
		{"github.issues", "github.issues_extra", false},
		{"slack", "github", false},
		{"GitHub", "github", false}, // case-sensitive
		{"", "github", false},       // not a wildcard
		{"github", "", false},
		{"", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.filter+"~"+tt.domain, func(t *testing.T) {
			if got := DomainMatches(tt.filter, tt.domain); got != tt.want {
				t.Errorf("DomainMatches(%q, %q) = %v, want %v", tt.filter, tt.domain, got, tt.want)
			}
		})
	}
}

func TestApplyInference(t *testing.T) {
	tests := []struct {
		name           string
		def            Definition
		source         string
		wantDomains    []string
		wantCategories []string
	}{
		{
			name:           "fills both from source and name",
			def:            Definition{Name: "list_issues"},
			source:         "modelcontextprotocol/github",
			wantDomains:    []string{"github", "github.issues"},
			wantCategories: []string{"crud.read"},
		},
		{
			name:           "falls back to d.Domain",
			def:            Definition{Name: "send_message", Domain: "slack"},
			wantDomains:    []string{"slack", "slack.messages"},
			wantCategories: []string{"notify"},
		},
		{
			name:           "source argument before d.Domain",
			def:            Definition{Name: "send_message", Domain: "chat"},
			source:         "discord-bot",
			wantDomains:    []string{"discord", "discord.messages"},
			wantCategories: []string{"notify"},
		},
		{
			name: "mcp: URI: the tool name and, without a source, the server",
			def: Definition{URI: "mcp:tracker/issues_list@1.0", Name: "issues_list", Domain: "tracker",
				Bindings: Bindings{MCP: &MCPBinding{Server: "github/github-mcp", Tool: "list_issues"}}},
			wantDomains:    []string{"github", "github.issues"},
			wantCategories: []string{"crud.read"},
		},
		{
			name: "the source argument wins over the MCP server",
			def: Definition{URI: "mcp:tracker/issues_list@1.0", Name: "issues_list",
				Bindings: Bindings{MCP: &MCPBinding{Server: "github", Tool: "list_issues"}}},
			source:         "jira",
			wantDomains:    []string{"jira", "jira.issues"},
			wantCategories: []string{"crud.read"},
		},
		{
			name: "ossa: URI keeps its own name, not the tool's",
			def: Definition{URI: "ossa:memory/kg_query@1.0", Name: "kg_query", Domain: "memory",
				Bindings: Bindings{MCP: &MCPBinding{Server: "agent-brain", Tool: "list_graphs"}}},
			source:         "memory",
			wantDomains:    []string{"memory"},
			wantCategories: []string{"other"},
		},
		{
			name: "mcp binding without tool uses d.Name",
			def: Definition{Name: "delete_page",
				Bindings: Bindings{MCP: &MCPBinding{Server: "notion"}}},
			wantDomains:    []string{"notion", "notion.page"},
			wantCategories: []string{"crud.delete"},
		},
		{
			name:           "declared domains kept, categories filled",
			def:            Definition{Name: "list_issues", Domains: []string{"tracking"}},
			source:         "github",
			wantDomains:    []string{"tracking"},
			wantCategories: []string{"crud.read"},
		},
		{
			name:           "declared categories kept, domains filled",
			def:            Definition{Name: "list_issues", Categories: []string{"reporting"}},
			source:         "github",
			wantDomains:    []string{"github", "github.issues"},
			wantCategories: []string{"reporting"},
		},
		{
			name:           "nothing to infer domains from",
			def:            Definition{Name: "assign_widget"},
			wantDomains:    nil,
			wantCategories: []string{"other"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.def
			d.ApplyInference(tt.source)
			if !slices.Equal(d.Domains, tt.wantDomains) {
				t.Errorf("%s: Domains = %q, want %q", tt.name, d.Domains, tt.wantDomains)
			}
			if !slices.Equal(d.Categories, tt.wantCategories) {
				t.Errorf("%s: Categories = %q, want %q", tt.name, d.Categories, tt.wantCategories)
			}
		})
	}
}

// corpusDir holds real CCOS-generated capability files.
const corpusDir = "../../shared/corpus/ccos"

// corpusExpected is what the rules give for every GitHub MCP tool found in
// the corpus: the sub-domain ("" for none) and the categories. None of the
// corpus files records :domains or :categories (CCOS keeps them in its
// marketplace, not in the exported RTFS), so these were derived by hand from
// INFERENCE.md; they pin the rules' result on real tool names. Should a
// corpus file ever carry :domains or :categories, the test compares Infer
// with those instead.
var corpusExpected = map[string]struct {
	sub  string
	cats []string
}{
	"add_comment_to_pending_review": {"comment.to.pending.review", []string{"crud.create"}},
	"add_issue_comment":             {"issue.comment", []string{"crud.create"}},
	"add_sub_issue":                 {"sub.issue", []string{"crud.create"}},
	"assign_copilot_to_issue":       {"", []string{"other"}},
	"create_branch":                 {"branches", []string{"crud.create"}},
	"create_issue":                  {"issues", []string{"crud.create"}},
	"create_or_update_file":         {"or.update.file", []string{"crud.create"}},
	"create_pull_request":           {"pull_requests", []string{"crud.create"}},
	"create_repository":             {"repos", []string{"crud.create"}},
	"delete_file":                   {"files", []string{"crud.delete"}},
	"fork_repository":               {"", []string{"other"}},
	"get_commit":                    {"commits", []string{"crud.read"}},
	"get_file_contents":             {"file.contents", []string{"crud.read"}},
	"get_issue":                     {"issues", []string{"crud.read"}},
	"get_issue_comments":            {"issue.comments", []string{"crud.read"}},
	"get_label":                     {"labels", []string{"crud.read"}},
	"get_latest_release":            {"latest.release", []string{"crud.read"}},
	"get_me":                        {"me", []string{"crud.read"}},
	"get_release_by_tag":            {"release.by.tag", []string{"crud.read"}},
	"get_tag":                       {"tags", []string{"crud.read"}},
	"get_team_members":              {"team.members", []string{"crud.read"}},
	"get_teams":                     {"teams", []string{"crud.read"}},
	"issue_read":                    {"", []string{"other"}},
	"issue_write":                   {"", []string{"other"}},
	"list_branches":                 {"branches", []string{"crud.read"}},
	"list_commits":                  {"commits", []string{"crud.read"}},
	"list_issue_types":              {"issue.types", []string{"crud.read"}},
	"list_issues":                   {"issues", []string{"crud.read"}},
	"list_label":                    {"labels", []string{"crud.read"}},
	"list_pull_requests":            {"pull.requests", []string{"crud.read"}},
	"list_releases":                 {"releases", []string{"crud.read"}},
	"list_sub_issues":               {"sub.issues", []string{"crud.read"}},
	"list_tags":                     {"tags", []string{"crud.read"}},
	"merge_pull_request":            {"", []string{"other"}},
	"pull_request_read":             {"", []string{"other"}},
	"pull_request_review_write":     {"", []string{"other"}},
	"push_files":                    {"", []string{"other"}},
	"remove_sub_issue":              {"sub.issue", []string{"crud.delete"}},
	"reprioritize_sub_issue":        {"", []string{"other"}},
	"request_copilot_review":        {"", []string{"other"}},
	"search_code":                   {"code", []string{"search"}},
	"search_issues":                 {"issues", []string{"search"}},
	"search_pull_requests":          {"pull.requests", []string{"search"}},
	"search_repositories":           {"repositories", []string{"search"}},
	"search_users":                  {"users", []string{"search"}},
	"sub_issue_write":               {"", []string{"other"}},
	"update_issue":                  {"issues", []string{"crud.update"}},
	"update_pull_request":           {"pull_requests", []string{"crud.update"}},
	"update_pull_request_branch":    {"pull.request.branch", []string{"crud.update"}},
}

// corpusTool is one (server, tool) pair read from the corpus, with the
// domains and categories the file records, if any.
type corpusTool struct {
	file, server, tool        string
	domains, categories       []string
	hasDomains, hasCategories bool
}

var (
	corpusBlockStart = regexp.MustCompile(`(?m)^[ \t]*(?:\(capability |\{:type "capability")`)
	corpusToolName   = regexp.MustCompile(`:tool_name "([^"]+)"`)
	corpusServerName = regexp.MustCompile(`:(?:mcp_)?server_name "([^"]+)"`)
	corpusHeader     = regexp.MustCompile(`(?m)^;; Server: (\S+)`)
	corpusDomains    = regexp.MustCompile(`:domains \[([^\]]*)\]`)
	corpusCategories = regexp.MustCompile(`:categories \[([^\]]*)\]`)
	corpusString     = regexp.MustCompile(`"([^"]*)"`)
)

func corpusStrings(vector string) []string {
	var out []string
	for _, m := range corpusString.FindAllStringSubmatch(vector, -1) {
		out = append(out, m[1])
	}
	return out
}

// readCorpusRTFS returns the MCP tools of one RTFS file (one capability per
// file, or a module of several), and a note for each capability skipped.
func readCorpusRTFS(path string, text string) (tools []corpusTool, skipped []string) {
	header := ""
	if m := corpusHeader.FindStringSubmatch(text); m != nil {
		header = m[1]
	}
	locs := corpusBlockStart.FindAllStringIndex(text, -1)
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		block := text[loc[0]:end]
		ct := corpusTool{file: path, server: header}
		if m := corpusToolName.FindStringSubmatch(block); m != nil {
			ct.tool = m[1]
		}
		if m := corpusServerName.FindStringSubmatch(block); m != nil {
			ct.server = m[1]
		}
		if ct.tool == "" || ct.server == "" {
			skipped = append(skipped, path+": capability without an MCP server name or tool name")
			continue
		}
		if m := corpusDomains.FindStringSubmatch(block); m != nil {
			ct.domains, ct.hasDomains = corpusStrings(m[1]), true
		}
		if m := corpusCategories.FindStringSubmatch(block); m != nil {
			ct.categories, ct.hasCategories = corpusStrings(m[1]), true
		}
		tools = append(tools, ct)
	}
	return tools, skipped
}

// TestInferCorpus runs Infer over every (server, tool) pair found in the real
// CCOS files of the shared corpus.
func TestInferCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("CCOS corpus not found at %s (relative to the package dir); skipping the corpus check", corpusDir)
	}
	var tools []corpusTool
	err := filepath.WalkDir(corpusDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(path, ".rtfs"):
			found, skipped := readCorpusRTFS(path, string(b))
			for _, s := range skipped {
				t.Logf("skipped %s", s)
			}
			tools = append(tools, found...)
		case strings.HasSuffix(path, "_tools.json"):
			var list []struct {
				Name       string `json:"name"`
				ServerName string `json:"server_name"`
			}
			if err := json.Unmarshal(b, &list); err != nil {
				return err
			}
			for _, x := range list {
				tools = append(tools, corpusTool{file: path, server: x.ServerName, tool: x.Name})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) == 0 {
		t.Fatalf("no (server, tool) pair found under %s", corpusDir)
	}
	recorded := 0
	for _, ct := range tools {
		got := Infer(ct.server, ct.tool)
		if ct.hasDomains || ct.hasCategories {
			recorded++
			if ct.hasDomains && !slices.Equal(got.Domains, ct.domains) {
				t.Errorf("%s: Infer(%q, %q).Domains = %q, CCOS wrote %q", ct.file, ct.server, ct.tool, got.Domains, ct.domains)
			}
			if ct.hasCategories && !slices.Equal(got.Categories, ct.categories) {
				t.Errorf("%s: Infer(%q, %q).Categories = %q, CCOS wrote %q", ct.file, ct.server, ct.tool, got.Categories, ct.categories)
			}
			continue
		}
		exp, ok := corpusExpected[ct.tool]
		if !ok {
			t.Errorf("%s: tool %q (server %q) has no expectation; Infer gives %+v", ct.file, ct.tool, ct.server, got)
			continue
		}
		wantDomains := []string{"github"}
		if exp.sub != "" {
			wantDomains = append(wantDomains, "github."+exp.sub)
		}
		if !slices.Equal(got.Domains, wantDomains) || !slices.Equal(got.Categories, exp.cats) {
			t.Errorf("%s: Infer(%q, %q) = %+v, want domains %q, categories %q",
				ct.file, ct.server, ct.tool, got, wantDomains, exp.cats)
		}
	}
	t.Logf("checked %d (server, tool) pairs; %d carried CCOS-written :domains/:categories", len(tools), recorded)
}
