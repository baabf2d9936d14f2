// Package openapi imports OpenAPI 3.0, 3.1 and Swagger 2.0 documents (YAML
// or JSON) as capability definitions: one per operation, each with an http
// binding, a self-contained input and output JSON Schema 2020-12 (the
// shared schemas it references kept under its own $defs), declared errors,
// auth, keywords, CCOS metadata.openapi and provenance.
//
// # Parser
//
// The document is decoded into a generic tree (encoding/json, or
// gopkg.in/yaml.v3 for YAML, whose nodes also give the line and column of
// failed operations) and read by this package's own $ref resolver, not by
// an OpenAPI library. Measured on GitHub's spec (13 MB JSON, 1,223
// operations) on the 2-core machine the targets were set for:
// github.com/getkin/kin-openapi takes 2.2 s only to load it (before any
// inlining, and it reads 3.1 and 2.0 through separate conversions),
// github.com/pb33f/libopenapi takes 2.0 s and 640 MB to build its model
// (and its current release depends on a module the Go proxy refuses);
// decoding the tree takes 0.15 s, and the whole import about 0.3-0.6 s
// with a peak RSS near 135 MB. Every caphub output is a JSON Schema
// converted from the document anyway, so the typed models would only be
// converted back to maps. The resolver handles the three versions
// directly, keeps circular references as they are (see Schemas), and
// bounds the work any document can cause.
//
// # Rules
//
// Operations. Each get, put, post, delete, options, head, patch and trace
// of each path (paths in sorted order, methods in that order) is one
// capability; anything the binding cannot express is a failure. Path items
// may be $refs; path-level parameters apply to every operation, which may
// override them by name and location. Webhooks (3.1) and callbacks are
// ignored, with a warning for webhooks.
//
// Names. The operationId in snake_case (see snakeName: getPetById →
// get_pet_by_id, repos/list-for-org → repos_list_for_org, a leading digit
// gets "op_"), else the method and path (GET /pets/{petId} →
// get_pets_pet_id). The first operation keeps a name; later ones with the
// same name get the smallest free suffix _2, _3, … in import order, never
// one that another operation's own name uses.
//
// Domain and version. The domain is Options.Domain, else info.title as a
// domain (lower-cased, apostrophes dropped, every other run of characters
// that are not ASCII letters or digits made one "-": "Swagger Petstore" →
// swagger-petstore),
// else the document's file name, else "api". The version is info.version
// when it is a semantic version of one to three numbers (a leading v is
// dropped; missing parts are 0: v2 → 2.0.0, 1.2 → 1.2.0), else 1.0.0 (for
// dates such as 2023-05-01, "latest"); Options.Version overrides it. The
// URI is ossa:<domain>/<name>@<MAJOR.MINOR>; metadata.openapi.api_version
// keeps info.version as written.
//
// Input. One object schema whose properties are the operation's path,
// query, header and cookie parameters and its request body. A parameter's
// field is its name when it can be a {placeholder} ([A-Za-z_][A-Za-z0-9_]*),
// else the name with other characters replaced by "_" (team-slug →
// team_slug, X-Request-ID → X_Request_ID); when two fields would share a
// name, the later gets "<in>_" in front, then a numeric suffix. Path
// parameters are always required, others when they say required: true.
// Header parameters named Accept, Content-Type or Authorization are ignored
// (as OpenAPI says), and so is the parameter the binding's auth supplies
// (same location and name). A path template variable that no parameter
// declares becomes a required string field. A parameter's schema is its
// schema, else the schema of its preferred content type, else (Swagger 2.0)
// the schema keywords written on the parameter; its description,
// deprecated and example are added.
//
// Request body. The content type is application/json, else the first
// (sorted) type mentioning json, else application/x-www-form-urlencoded,
// else multipart/form-data, else the first one; the others are listed in
// x-body.alternatives. In Swagger 2.0 the body is the in: body parameter
// (content type from consumes, JSON preferred), or the formData parameters
// as one object (multipart/form-data when one is type: file or consumes
// offers only multipart, else application/x-www-form-urlencoded). The
// body's properties are merged into the input when its schema is a plain
// object (type object or untyped with properties; no allOf/anyOf/oneOf or
// other constraints; additionalProperties absent or false), none of its
// property names is already a field, and the body is required or requires
// none of its properties (merging must not make an optional body's fields
// mandatory); a required body's required properties are then required
// fields. Otherwise the body is the one field "body" (else "request_body"),
// required when the body is.
//
// Binding. The http binding's url is the base URL followed by the path,
// its {variables} renamed to their fields; method is the operation's;
// headers map each header parameter to its {field} and Content-Type to the
// body's content type; body_template stays empty. Extra["x-parameters"]
// maps every field to its location and original name, and
// Extra["x-body"] says which fields make the body. The base URL is
// Options.BaseURL, else (3.x) one of the servers of the operation, else of
// its path item, else of the document (default "/"): the first that gives
// an https URL, else the first that gives an http one. A server's
// variables take their default (else their first enum value); a relative
// URL resolves against the document's location, which is its URL when it
// was fetched, else its info.x-origin (the APIs.guru directory's record of
// where it was fetched), never a file host such as raw.githubusercontent.com;
// a scheme-relative one (//host/base) takes https, and one that starts with
// a host name and no scheme is read as https with a warning. In 2.0 it is
// scheme://host basePath, scheme https when listed, else http when listed,
// else the document location's, else https, host defaulting to the
// document location's. When no base can be known the operation still
// imports: its url starts with https://base-url-unknown.invalid, its
// Extra["x-base-url-unknown"] says why, httpbind refuses every call saying
// to pass --base-url, and the document gets one warning per unknown server.
//
// Auth. The operation's security, else the document's (an empty list means
// none), is a list of alternatives: the first with a supported scheme is
// used, and within it the first supported scheme by name. apiKey in a
// header or the query → api_key with that location and parameter name;
// http bearer → bearer, oauth2 and openIdConnect → oauth2, http basic (2.0
// basic) → basic, all in the Authorization header; an alternative whose
// schemes are all supported is preferred. Schemes caphub cannot apply
// (apiKey in a cookie, mutualTLS, other http schemes, AWS signatures that
// API Gateway exports mark with x-amazon-apigateway-authtype) are never
// stored as another kind: an operation left needing one gets no auth and
// metadata.openapi.auth_unsupported naming it, and one warning per scheme
// names the operations. The secret is never read nor stored: auth.env names the
// environment variable that holds it, <DOMAIN>_API_KEY (api_key),
// <DOMAIN>_TOKEN (bearer and oauth2: an access token), <DOMAIN>_CREDENTIALS
// (basic: "user:password"), with <DOMAIN> the domain in upper case and "-"
// → "_"; when two supported schemes of the document would get the same
// name, each is <DOMAIN>_<SCHEME>_<SUFFIX> with its scheme name. The
// scheme name and OAuth scopes are kept as auth x-scheme and x-scopes.
//
// Output and errors. The output is the schema of the first of 200, 201, the
// other 2xx in ascending order, 2XX, and, only when there is no success
// response, default (its preferred content type as for bodies; a response
// without body gives {"description": "HTTP 204: the response has no
// body"}). Every 4xx and 5xx response, 4XX, 5XX, and default when it is not
// the output, is a declared error: HTTP_<status>_<reason phrase>
// (HTTP_404_NOT_FOUND), HTTP_<status>_<first words of the description> for
// a status without a standard phrase, HTTP_4XX_CLIENT_ERROR,
// HTTP_5XX_SERVER_ERROR and HTTP_ERROR for default, made unique with a
// suffix, with the status (404) or range ("4XX") in the error's
// x-http-status; 429, 502, 503 and 504 are retryable.
//
// Schemas. A $ref to a schema (components.schemas, Swagger 2.0
// definitions, or any local JSON pointer) becomes {"$ref":
// "#/$defs/<name>"}, and the schema it names a component: converted once
// per document, and put under $defs in each input and output schema that
// references it, directly or through other components, and in no other
// (so each stands alone and carries only what it uses); the definitions of
// one import share that one converted schema rather than a copy each
// (read-only, see Result.Definitions). The name is the
// component's (components.schemas.Pet → Pet, definitions.Pet → Pet), else
// the pointer's segments joined with "."
// (components.schemas.T.properties.a → T.properties.a), characters other
// than ASCII letters, digits, "_", "." and "-" made "_", and made unique in
// the document with a suffix _2, _3, … (components.schemas and definitions
// are named first, in sorted order). Recursive schemas stay recursive; a
// loop of bare $refs (A → B → A) accepts any value, with a $comment. The
// components one schema carries are bounded by Options.MaxSharedBytes of
// JSON (16 KiB by default): they are added nearest first (those the
// schema references, then those they reference, …, the smallest first
// within each step) while they fit; one that does not is in $defs as a stub, {"type":
// <its type>, "$comment": "caphub: not expanded …"}, which accepts every
// value the component accepts, and what it references is not added for it
// (Microsoft Graph's user reaches nearly all of Graph's 2,600 schemas). An
// output schema that is only a $ref to an object component is that
// component's schema copied to the root (the component stays in $defs
// when it refers to itself). Where the shape of a schema decides something
// (whether a body's properties are merged into the input, how an array
// parameter is serialised) the importer looks through the $ref. Other
// $refs (to parameters, request bodies, responses, path items, security
// schemes and examples) are followed and their targets used as they are. A
// $ref to another document is a failure (bundle the spec first). Beside a
// $ref, description and title override the target's and nullable makes it
// anyOf [the $ref, {type: null}]; in 3.1 other keywords also apply (they
// stay beside the $ref, as 2020-12 reads them). OpenAPI 3.0 and 2.0 dialects become 2020-12: nullable (and
// x-nullable) adds "null" to the type and enum, or wraps a schema that
// combines subschemas as anyOf [schema, {type: null}]; boolean
// exclusiveMinimum/Maximum become numeric; example becomes examples; type
// file becomes a binary string; tuple items become prefixItems;
// dependencies split into dependentRequired/dependentSchemas;
// discriminator keeps only propertyName; a Reference Object written as an
// example ({$ref: '#/components/examples/x'}) is replaced by its value.
// Keywords whose value is malformed (a boolean required, a negative
// minLength, a pattern Go's regular expressions cannot compile, an unknown
// type name) are dropped, and so are xml, externalDocs, x- extensions,
// $id, $schema, $defs/definitions and unknown keywords, as is a property
// named $ref. Numbers are in the model's canonical form (whole numbers as
// int64).
//
// Everything else. title is the summary's first line, else the
// operationId (else the method and path) in words (reposCreateFork → Repos
// create fork, see humanTitle); description the description, else the summary;
// documentation_url the operation's externalDocs.url, else the document's;
// deprecated: true makes the capability deprecated with a migration guide
// pointing at the API's documentation; tags become keywords; permissions
// are [network.http] and effects [network_request] plus auth_required with
// auth (as CCOS writes them); domains and categories are inferred with
// ApplyInference(domain). metadata.openapi holds base_url (when known),
// endpoint_method, endpoint_path, api_version, openapi_version,
// operation_id, auth_type, auth_location, auth_param_name,
// auth_unsupported, request_content_type and response_content_type; provenance is
// {method: api_introspection, source_url, created_at (RFC 3339),
// capability_type: specialized_http_api, introspector_version}, the values
// of the CCOS seed for capabilities read from an HTTP API's description.
//
// Failures and limits. An operation that cannot be imported is an
// ImportFailure with the reason and the operation's line and column, and
// the import goes on. Import fails as a whole only when the bytes are not
// an OpenAPI or Swagger document (ErrNotOpenAPI), the options are invalid,
// or the context ends. Fetch reads at most 64 MiB, from a URL within 60
// seconds. Each import converts at most one million nodes plus
// one per byte of the document (see workBudget); since every component is
// converted once, only data expanded by YAML aliases reaches it. Each
// definition's input and output schemas, with their $defs, hold at most
// Options.MaxSchemaNodes nodes (by default capability.MaxSchemaNodes, the
// registry's own bound); beyond either the operation fails instead of the
// import running away. A converted schema must also pass
// capability.CheckSchemaBudget (nesting at most
// capability.MaxSchemaNesting, the same limit the converter applies, and a
// bounded number of subschemas), so an import never yields a definition
// that registration would refuse.
package openapi
