// Package rtfs reads and writes CCOS capability files in RTFS, the
// Clojure-like language of CCOS (seeds/ccos-rtfs-capability-metadata.md).
//
// It has three layers:
//
//   - Parse, a reader of the whole RTFS s-expression syntax into Values that
//     keep their positions, their exact source span and trailing comments;
//   - TypeToSchema and SchemaToType, the mapping between RTFS type
//     expressions and JSON Schema;
//   - ReadCapabilities and WriteCapability, which turn `(capability "id" …)`
//     forms, `(do …)` modules of them and `{:type "capability" …}` maps into
//     capability.Definitions and back, in the hierarchical
//     `:metadata {:mcp … :openapi … :discovery …}` layout.
//
// Nothing read is lost: what the Definition does not model is kept in
// Definition.Metadata["rtfs"], and reading what WriteCapability wrote gives
// back the same Definition.
//
// # Capability forms
//
// A file holds `(capability "id" :key value …)` forms, `{:type "capability"
// :id "id" :key value …}` maps, and `(do …)` modules of either, at any depth
// of `do`. Other top-level forms (definitions, plans, code) are not
// capabilities and are passed over.
//
// # Identity: the id → URI rule
//
// A capability is an MCP tool when its :metadata has an :mcp map, or its
// :provider is "MCP" or a map with :type "mcp", or its id starts with "mcp.".
// Then:
//
//   - the tool is :metadata :mcp :tool_name, else :provider :tool_name, else
//     the id's last dot-separated part;
//   - the server is :metadata :mcp :server_name, else the id between "mcp."
//     and ".<tool>" ("mcp.github.list_issues" → github,
//     "mcp.github/github-mcp.create_branch" → github/github-mcp);
//   - the URI is mcp:<server as a domain>/<tool>@MAJOR.MINOR, where the server
//     becomes a domain by lower-casing it and turning every run of other
//     characters than a-z and 0-9 into "-" (github/github-mcp →
//     github-github-mcp), and the definition gets the binding
//     mcp {server: <that domain>, tool: <tool>}.
//
// Any other capability is ossa:<domain>/<name>@MAJOR.MINOR, the id split at
// its last dot: the part before becomes the domain as above
// (openweather_api → openweather-api), the part after the name, lower-cased
// with runs of other characters than a-z, 0-9 and _ turned into "_"
// ("demo.hello" → ossa:demo/hello@1.0). An :openapi metadata map with
// :base_url gives it an http binding: :endpoint_method (default GET) on
// :base_url + :endpoint_path, with auth from :auth_type, :auth_location,
// :auth_param_name and :auth_env_var. Without one, a capability with an
// :implementation gets the rtfs binding (RTFSBinding): its body is RTFS
// code, which caphub keeps but does not evaluate, so invoking it is
// refused with what to bind it to instead.
//
// caphub's own :uri and :bindings keys, when present, override what the
// rule derives (WriteCapability writes them only when the rule would not
// give the definition's own). The id itself is kept in
// Metadata["rtfs"]["id"] unless it is the one WriteCapability would write
// for the URI ("mcp.<domain>.<name>" or "<domain>.<name>").
//
// # Fields
//
// :name is the title; :description; :version (default 1.0.0; "2.5" is
// completed to 2.5.0); :input-schema and :output-schema are RTFS types (see
// TypeToSchema); :permissions, :effects, :domains, :categories, :intents,
// :keywords and :tools are vectors of keywords or strings. caphub's other
// Definition fields have kebab-case keys (:documentation-url, :stability,
// :deprecated-by, :sunset-date, :migration-guide, :ui-required, :display,
// :system-prompt-addition, :attestation, :errors, :examples, :extra).
//
// :metadata is hierarchical: :mcp and :openapi maps go to Metadata["mcp"]
// and Metadata["openapi"], :discovery to Provenance, any other namespace to
// Metadata as it is. The old flat layout is migrated: top-level
// :source_url, :discovery_method, :created_at, :capability_type,
// :introspector_version and :discovery_* keys and the same keys inside
// :metadata go to the discovery map (:discovery_source, the name of the
// service that discovered the tool, becomes its method when none is given);
// :mcp_metadata {…} and :mcp_* keys go to :mcp (:mcp_server_endpoint is
// :server_url), :openapi_* keys to :openapi. A flat key whose hierarchical
// place already holds another value stays where it was.
//
// :implementation is kept verbatim, as the exact text of the form, in
// Metadata["rtfs"]["implementation"]. Every other key goes to
// Metadata["rtfs"]: data (strings, numbers, keywords, vectors, maps) as
// data, with keywords as ":name" strings; code (lists, symbols) as its
// verbatim text under Metadata["rtfs"]["verbatim"][key].
package rtfs
