package ossa

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/caphub/caphub/capability"
	"gopkg.in/yaml.v3"
)

// Format is an output encoding.
type Format string

const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// singleDoc and listDoc are the two capability file layouts.
type singleDoc struct {
	Capability *capability.Definition `json:"capability" yaml:"capability"`
}

type listDoc struct {
	Capabilities []capability.Definition `json:"capabilities" yaml:"capabilities"`
}

type indexDoc struct {
	Registry *Index `json:"registry" yaml:"registry"`
}

// Write encodes definitions as an OSSA capability file: one definition as a
// `capability:` document, several as a `capabilities:` list. Reading the
// output gives back equal definitions, and writing those gives the same bytes.
func Write(w io.Writer, defs []capability.Definition, f Format) error {
	var doc any = listDoc{Capabilities: defs}
	if len(defs) == 1 {
		d := defs[0]
		doc = singleDoc{Capability: &d}
	}
	if f != YAML && f != "" {
		return encode(w, doc, f)
	}
	// YAML writes a nil map as {}, which would read back as the empty
	// schema (anything) rather than a missing one: write those as null.
	var root yaml.Node
	if err := root.Encode(doc); err != nil {
		return err
	}
	_, list := mappingValue(&root, "capabilities")
	_, single := mappingValue(&root, "capability")
	for i, d := range defs {
		node := single
		if len(defs) != 1 {
			if list == nil || i >= len(list.Content) {
				break
			}
			node = list.Content[i]
		}
		for key, missing := range map[string]bool{"input": d.Input == nil, "output": d.Output == nil} {
			if _, v := mappingValue(node, key); v != nil && missing {
				*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			}
		}
	}
	return encode(w, &root, f)
}

// WriteIndex encodes a registry index in the OSSA §5.1 layout.
func WriteIndex(w io.Writer, idx *Index, f Format) error {
	return encode(w, indexDoc{Registry: idx}, f)
}

func encode(w io.Writer, v any, f Format) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case YAML, "":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	}
	return fmt.Errorf("unknown format %q: use yaml or json", f)
}
