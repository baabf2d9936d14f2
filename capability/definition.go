// Package capability holds caphub's one model of a capability: the versioned
// contract (URI, input/output JSON Schemas, error codes) and the bindings that
// execute it, with the rules that act on it: URI and version parsing,
// compatibility and negotiation, validation, breaking-change diff and
// domain/category inference.
//
// Every input format (OSSA, RTFS, Agent OS, OpenAPI, MCP tool listings) is read
// into a Definition and every output is written from one.
package capability

import (
	"maps"
	"slices"
)

// Stability values of a Definition (OSSA §3.1).
const (
	StabilityExperimental = "experimental"
	StabilityBeta         = "beta"
	StabilityStable       = "stable"
	StabilityDeprecated   = "deprecated"
)

// Stabilities lists the valid stability values in order of maturity.
var Stabilities = []string{StabilityExperimental, StabilityBeta, StabilityStable, StabilityDeprecated}

// Schema is a JSON Schema document (2020-12 or draft-07) held as decoded JSON:
// map[string]any, []any, string, bool, nil, int64 and float64 values.
type Schema = map[string]any

// Definition is one version of one capability. Its identity is (scheme,
// domain, name, full version); a registered version is immutable.
//
// Fields caphub does not model are kept in Extra, so that reading and writing
// a file never drops what it said.
type Definition struct {
	URI              string `json:"uri" yaml:"uri"`
	Name             string `json:"name" yaml:"name"`
	Domain           string `json:"domain" yaml:"domain"`
	Version          string `json:"version" yaml:"version"`
	Title            string `json:"title,omitempty" yaml:"title,omitempty"`
	Description      string `json:"description,omitempty" yaml:"description,omitempty"`
	DocumentationURL string `json:"documentation_url,omitempty" yaml:"documentation_url,omitempty"`

	Stability      string `json:"stability,omitempty" yaml:"stability,omitempty"`
	DeprecatedBy   string `json:"deprecated_by,omitempty" yaml:"deprecated_by,omitempty"`
	SunsetDate     string `json:"sunset_date,omitempty" yaml:"sunset_date,omitempty"`
	MigrationGuide string `json:"migration_guide,omitempty" yaml:"migration_guide,omitempty"`

	Input  Schema     `json:"input" yaml:"input"` // not omitempty: {} (anything) differs from absent
	Output Schema     `json:"output" yaml:"output"`
	Errors []ErrorDef `json:"errors,omitempty" yaml:"errors,omitempty"`

	Bindings Bindings `json:"bindings" yaml:"bindings"`

	Permissions []string `json:"permissions,omitempty" yaml:"permissions,omitempty"`
	Effects     []string `json:"effects,omitempty" yaml:"effects,omitempty"`
	Domains     []string `json:"domains,omitempty" yaml:"domains,omitempty"`
	Categories  []string `json:"categories,omitempty" yaml:"categories,omitempty"`
	Intents     []string `json:"intents,omitempty" yaml:"intents,omitempty"`
	Keywords    []string `json:"keywords,omitempty" yaml:"keywords,omitempty"`
	UIRequired  bool     `json:"ui_required,omitempty" yaml:"ui_required,omitempty"`

	Display              *Display `json:"display,omitempty" yaml:"display,omitempty"`
	SystemPromptAddition string   `json:"system_prompt_addition,omitempty" yaml:"system_prompt_addition,omitempty"`
	Tools                []string `json:"tools,omitempty" yaml:"tools,omitempty"`

	Attestation *Attestation   `json:"attestation,omitempty" yaml:"attestation,omitempty"`
	Provenance  *Provenance    `json:"provenance,omitempty" yaml:"provenance,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty" yaml:"metadata,omitempty"`
	Examples    []Example      `json:"examples,omitempty" yaml:"examples,omitempty"`

	Extra map[string]any `json:"-" yaml:",inline"`
}

// ErrorDef is an error a capability declares (OSSA ErrorDefinition).
type ErrorDef struct {
	Code        string         `json:"code" yaml:"code"`
	Description string         `json:"description,omitempty" yaml:"description,omitempty"`
	Retryable   bool           `json:"retryable" yaml:"retryable"`
	Extra       map[string]any `json:"-" yaml:",inline"`
}

// Bindings says how a capability is executed. The invoker tries them in the
// order of BindingOrder.
type Bindings struct {
	Native     *NativeBinding     `json:"native,omitempty" yaml:"native,omitempty"`
	MCP        *MCPBinding        `json:"mcp,omitempty" yaml:"mcp,omitempty"`
	HTTP       *HTTPBinding       `json:"http,omitempty" yaml:"http,omitempty"`
	GRPC       *GRPCBinding       `json:"grpc,omitempty" yaml:"grpc,omitempty"`
	CLI        *CLIBinding        `json:"cli,omitempty" yaml:"cli,omitempty"`
	Delegation *DelegationBinding `json:"delegation,omitempty" yaml:"delegation,omitempty"`
	Extra      map[string]any     `json:"-" yaml:",inline"`
}

// Binding type names, in the order the invoker tries them (OSSA §9.2, with
// native first).
const (
	BindingNative     = "native"
	BindingMCP        = "mcp"
	BindingHTTP       = "http"
	BindingGRPC       = "grpc"
	BindingCLI        = "cli"
	BindingDelegation = "delegation"
)

// BindingOrder is the order in which bindings are tried.
var BindingOrder = []string{BindingNative, BindingMCP, BindingHTTP, BindingGRPC, BindingCLI, BindingDelegation}

// Types returns the binding types present, in BindingOrder, followed by any
// unmodelled binding kinds kept in Extra (sorted).
func (b Bindings) Types() []string {
	var out []string
	if b.Native != nil {
		out = append(out, BindingNative)
	}
	if b.MCP != nil {
		out = append(out, BindingMCP)
	}
	if b.HTTP != nil {
		out = append(out, BindingHTTP)
	}
	if b.GRPC != nil {
		out = append(out, BindingGRPC)
	}
	if b.CLI != nil {
		out = append(out, BindingCLI)
	}
	if b.Delegation != nil {
		out = append(out, BindingDelegation)
	}
	return append(out, slices.Sorted(maps.Keys(b.Extra))...)
}

// Empty reports whether no binding at all is declared.
func (b Bindings) Empty() bool { return len(b.Types()) == 0 }

// NativeBinding names a handler compiled into caphub.
type NativeBinding struct {
	Handler string         `json:"handler" yaml:"handler"`
	Extra   map[string]any `json:"-" yaml:",inline"`
}

// MCPBinding calls a tool on a saved MCP server. Mapping renames input fields
// (capability field → tool field); OutputMapping renames output fields (tool
// field → capability field); ErrorMapping maps upstream errors to declared codes.
type MCPBinding struct {
	Server        string            `json:"server" yaml:"server"`
	Tool          string            `json:"tool" yaml:"tool"`
	Mapping       map[string]string `json:"mapping,omitempty" yaml:"mapping,omitempty"`
	OutputMapping map[string]string `json:"output_mapping,omitempty" yaml:"output_mapping,omitempty"`
	ErrorMapping  map[string]string `json:"error_mapping,omitempty" yaml:"error_mapping,omitempty"`
	Extra         map[string]any    `json:"-" yaml:",inline"`
}

// HTTPBinding calls an HTTP endpoint. URL and BodyTemplate may hold {field}
// placeholders naming input fields.
type HTTPBinding struct {
	Method       string            `json:"method" yaml:"method"`
	URL          string            `json:"url" yaml:"url"`
	Headers      map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	BodyTemplate string            `json:"body_template,omitempty" yaml:"body_template,omitempty"`
	Auth         *HTTPAuth         `json:"auth,omitempty" yaml:"auth,omitempty"`
	Extra        map[string]any    `json:"-" yaml:",inline"`
}

// HTTPAuth says how an HTTP binding authenticates. The secret itself is never
// stored: it is read from the environment variable Env at call time.
type HTTPAuth struct {
	Type      string         `json:"type" yaml:"type"`                                 // api_key | bearer | basic | oauth2
	Location  string         `json:"location,omitempty" yaml:"location,omitempty"`     // header | query
	ParamName string         `json:"param_name,omitempty" yaml:"param_name,omitempty"` // header or query parameter name
	Env       string         `json:"env,omitempty" yaml:"env,omitempty"`               // environment variable holding the secret
	Extra     map[string]any `json:"-" yaml:",inline"`
}

// GRPCBinding calls a unary gRPC method through server reflection.
type GRPCBinding struct {
	Target  string            `json:"target,omitempty" yaml:"target,omitempty"`
	Service string            `json:"service" yaml:"service"`
	Method  string            `json:"method" yaml:"method"`
	Mapping map[string]string `json:"mapping,omitempty" yaml:"mapping,omitempty"`
	Extra   map[string]any    `json:"-" yaml:",inline"`
}

// CLIBinding runs a command. Command is split into argv once; each {field}
// placeholder fills exactly one argument and no shell is involved.
type CLIBinding struct {
	Command string            `json:"command" yaml:"command"`
	Parser  string            `json:"parser,omitempty" yaml:"parser,omitempty"` // json | text | yaml
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Extra   map[string]any    `json:"-" yaml:",inline"`
}

// DelegationBinding hands the call to another agent or caphub.
type DelegationBinding struct {
	Agent      string `json:"agent,omitempty" yaml:"agent,omitempty"`
	URL        string `json:"url,omitempty" yaml:"url,omitempty"`
	Capability string `json:"capability,omitempty" yaml:"capability,omitempty"`
	// TokenEnv names the environment variable holding the bearer token sent
	// to the delegate (another caphub's API token, an A2A agent's
	// credential); the secret itself is never stored.
	TokenEnv string         `json:"token_env,omitempty" yaml:"token_env,omitempty"`
	Extra    map[string]any `json:"-" yaml:",inline"`
}

// Display is the everruns presentation of a capability.
type Display struct {
	Icon     string         `json:"icon,omitempty" yaml:"icon,omitempty"`
	Category string         `json:"category,omitempty" yaml:"category,omitempty"`
	Extra    map[string]any `json:"-" yaml:",inline"`
}

// Attestation is a signature over the definition (CCOS).
type Attestation struct {
	KeyID     string         `json:"key_id" yaml:"key_id"`
	Algorithm string         `json:"algorithm" yaml:"algorithm"`
	Signature string         `json:"signature" yaml:"signature"`
	Extra     map[string]any `json:"-" yaml:",inline"`
}

// Provenance records where a definition came from (CCOS :discovery).
type Provenance struct {
	Method              string         `json:"method,omitempty" yaml:"method,omitempty"`
	SourceURL           string         `json:"source_url,omitempty" yaml:"source_url,omitempty"`
	CreatedAt           string         `json:"created_at,omitempty" yaml:"created_at,omitempty"`
	CapabilityType      string         `json:"capability_type,omitempty" yaml:"capability_type,omitempty"`
	IntrospectorVersion string         `json:"introspector_version,omitempty" yaml:"introspector_version,omitempty"`
	Extra               map[string]any `json:"-" yaml:",inline"`
}

// Example is one sample call.
type Example struct {
	Description string         `json:"description,omitempty" yaml:"description,omitempty"`
	Input       any            `json:"input,omitempty" yaml:"input,omitempty"`
	Output      any            `json:"output,omitempty" yaml:"output,omitempty"`
	Extra       map[string]any `json:"-" yaml:",inline"`
}
