// Package mcpregistry speaks the official MCP Registry's formats both ways:
// it reads server.json documents and the registry API's server lists
// (GET /v0/servers and /v0.1/servers pages), validates them against the
// published schema (modelcontextprotocol/registry,
// docs/reference/server-json/server.schema.json, 2025-12-11) with errors
// that name the field and what to do, maps each entry to a saved MCP
// server connection (mcpconn.Server: a package becomes a stdio command, a
// remote a URL), and maps saved servers back to entries, so that caphub
// can both import from a registry and serve as one (a subregistry).
//
// Every input is bounded: document size, nesting depth, and the number of
// servers, packages, arguments, variables and headers.
package mcpregistry

import "encoding/json"

// Server is a server.json document (the schema's ServerDetail).
type Server struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Title       string      `json:"title,omitempty"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Icons       []Icon      `json:"icons,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
	// Meta is publisher-provided extension metadata, kept as it is.
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
}

// Repository is where the server's source code is.
type Repository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Icon is an icon a client may display.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Registry types of a package.
const (
	TypeNPM   = "npm"
	TypePyPI  = "pypi"
	TypeNuGet = "nuget"
	TypeOCI   = "oci"
	TypeMCPB  = "mcpb"
)

// Transport types.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Package is one way to install and run the server locally.
type Package struct {
	RegistryType         string          `json:"registryType"`
	RegistryBaseURL      string          `json:"registryBaseUrl,omitempty"`
	Identifier           string          `json:"identifier"`
	Version              string          `json:"version,omitempty"`
	FileSHA256           string          `json:"fileSha256,omitempty"`
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is how a client talks to the server: a package's transport,
// or a remote (streamable-http or sse, with its URL and headers).
type Transport struct {
	Type    string          `json:"type"`
	URL     string          `json:"url,omitempty"`
	Headers []KeyValueInput `json:"headers,omitempty"`
	// Variables are the {name}s of a remote's URL template (2025-12-11).
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value a client supplies or the publisher fixes.
type Input struct {
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	Format      string   `json:"format,omitempty"`
	Value       string   `json:"value,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
}

// InputWithVariables is an input whose value may hold {name}s of its
// variables.
type InputWithVariables struct {
	Input
	Variables map[string]Input `json:"variables,omitempty"`
}

// Argument kinds.
const (
	ArgPositional = "positional"
	ArgNamed      = "named"
)

// Argument is a command-line argument: positional (a value, or a
// valueHint naming what the user gives) or named (a flag and its value).
type Argument struct {
	InputWithVariables
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	InputWithVariables
	Name string `json:"name"`
}

// Official is the registry-managed metadata of an entry in a list: the
// ServerResponse's _meta["io.modelcontextprotocol.registry/official"].
type Official struct {
	Status      string `json:"status,omitempty"` // active, deprecated or deleted
	PublishedAt string `json:"publishedAt,omitempty"`
	UpdatedAt   string `json:"updatedAt,omitempty"`
	IsLatest    bool   `json:"isLatest"`
}

// OfficialMetaKey is the _meta key of the registry-managed metadata.
const OfficialMetaKey = "io.modelcontextprotocol.registry/official"

// Response is one entry of the registry API: the server.json and the
// registry's metadata (the API's ServerResponse).
type Response struct {
	Server json.RawMessage `json:"server"`
	Meta   map[string]any  `json:"_meta,omitempty"`
}

// List is a page of the registry API's GET /v0/servers (ServerList).
type List struct {
	Servers  []Response   `json:"servers"`
	Metadata ListMetadata `json:"metadata"`
}

// ListMetadata pages a List: nextCursor continues, empty at the end.
type ListMetadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}
