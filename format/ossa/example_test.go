package ossa_test

import (
	"fmt"

	"github.com/caphub/caphub/format/ossa"
)

func ExampleRead() {
	data := []byte(`capability:
  uri: "ossa:code/lint@2.0"
  name: lint
  domain: code
  version: "2.0.1"
  description: Run linting checks
  input:
    type: object
    properties:
      path: {type: string}
    required: [path]
  bindings:
    cli: {command: "eslint --format json {path}", parser: json}
`)
	f, err := ossa.Read("lint.yaml", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range f.Entries {
		fmt.Println(f.Kind, e.Path, e.Line, e.Definition.URI, e.Definition.Version)
	}
	for _, iss := range f.Validate() {
		fmt.Println(iss.Severity, iss.Path, iss.Message)
	}
	// Output:
	// capability capability 2 ossa:code/lint@2.0 2.0.1
	// warning capability.documentation_url missing: capabilities should link to their documentation
	// warning capability.errors no error codes: declare the errors callers can expect (code, description, retryable)
	// error capability.output missing: define the output JSON Schema (use {} when the output is free-form)
	// warning capability.stability missing: set one of experimental, beta, stable, deprecated (stable is assumed)
}
