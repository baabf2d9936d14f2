package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/caphub/caphub/format/openapi"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newImportOpenAPICmd is `caphub import openapi FILE|URL`: it reads an
// OpenAPI 3.0/3.1 or Swagger 2.0 document and registers one capability per
// operation, reporting the operations it could not import and going on with
// the others.
func newImportOpenAPICmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "openapi FILE|URL",
		Short: "Import an OpenAPI 3.0/3.1 or Swagger 2.0 spec: one capability per operation",
		Long: `Import reads an OpenAPI 3.0, 3.1 or Swagger 2.0 document (YAML or JSON, a file or an
http(s) URL) and registers each operation as ossa:<domain>/<name>@MAJOR.MINOR with an http
binding:

  name     the operationId in snake_case (listPets → list_pets), else method and path
           (GET /pets/{id} → get_pets_id); duplicates get _2, _3, …
  domain   --domain, else the spec's info.title (Swagger Petstore → swagger-petstore)
  version  info.version when it is a semantic version (v2 → 2.0.0, 1.2 → 1.2.0), else
           1.0.0; --set-version overrides it
  input    one object: path, query and header parameters, and the request body's
           properties (or the whole body as the field "body"); the shared schemas each one
           uses are kept under its own $defs (recursive ones too)
  output   the 200 (201, other 2xx, 2XX, default) response's schema
  errors   the 4xx/5xx responses as HTTP_404_NOT_FOUND, …; 429/502/503/504 are retryable
  auth     apiKey, http bearer/basic, oauth2 from the security schemes; the secret is
           read at call time from an environment variable such as PETSTORE_API_KEY

The API's address comes from the spec's servers (or host and basePath), https preferred;
a relative one resolves against the spec's URL, or for a file against its info.x-origin
(as the APIs.guru directory records it). When it cannot be known, the operations import
with a warning and refuse every call until it is given: re-import with --base-url.

Operations that cannot be imported are listed with file:line:column and the others are
registered; the command then exits with status 1.`,
		Example: "  caphub import openapi ./petstore.yaml --domain pets\n" +
			"  caphub import openapi https://petstore3.swagger.io/api/v3/openapi.json --domain petstore\n" +
			"  caphub import openapi ./api.yaml --base-url https://api.example.com/v1 --set-version 1.1.0\n" +
			"  caphub capability show ossa:pets/list_pets",
		Args: exactArgs(1, "the spec FILE or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := openapi.Options{}
			opts.Domain, _ = cmd.Flags().GetString("domain")
			opts.BaseURL, _ = cmd.Flags().GetString("base-url")
			opts.Version, _ = cmd.Flags().GetString("set-version")
			if err := opts.Check(); err != nil {
				return &usageError{err}
			}
			src := args[0]
			data, err := openapi.Fetch(cmd.Context(), src)
			if err != nil {
				return err
			}
			// Provenance records where the spec came from: the URL, or the
			// file's absolute path.
			source := src
			if l := strings.ToLower(src); !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
				if abs, err := filepath.Abs(src); err == nil {
					source = abs
				}
			}
			res, err := openapi.Import(cmd.Context(), source, data, opts)
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			return withRegistry(cmd, func(reg registry.API) error {
				return registerImported(cmd, reg, res.Definitions, res.Failures)
			})
		},
	}
	cmd.Flags().String("domain", "", "domain of every capability, [a-z][a-z0-9-]* (default: from the spec's info.title)")
	cmd.Flags().String("base-url", "", "the API's address, replacing the spec's servers (needed when they are relative and the spec's location is unknown)")
	cmd.Flags().String("set-version", "", "register every capability at this version (MAJOR.MINOR.PATCH) instead of the one from info.version")
	return longServerWork(cmd)
}
