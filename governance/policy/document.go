package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/caphub/caphub/registry"
	"gopkg.in/yaml.v3"
)

// Budgets of a policy document (Read): a policy is a few lists of short
// patterns, so these are far above any real one and far below what could
// tie up a server.
const (
	MaxDocumentSize = 256 << 10 // bytes
	MaxListEntries  = 1000      // entries of each list
	MaxEntryLength  = 512       // bytes of each entry
)

// Read decodes a policy document, YAML or JSON (the body of PUT
// /v1/policies/{agent}, the file of caphub policy set --file): the fields
// of Policy by their JSON names, nothing else. name says where the
// document came from, for the errors. The agent may be left out (the
// caller names it); the policy is not validated (see Policy.Validate).
// Errors wrap registry.ErrInvalid.
func Read(name string, data []byte) (*Policy, error) {
	if len(data) > MaxDocumentSize {
		return nil, fmt.Errorf("%w: %s: the policy document holds %d bytes, more than the %d a policy may: a policy is a few lists of patterns", registry.ErrInvalid, name, len(data), MaxDocumentSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: %s: the policy document is empty: give granted_permissions, allowed_effects, min_trust_tier or require_approval", registry.ErrInvalid, name)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("%w: %s is not YAML or JSON: %v", registry.ErrInvalid, name, err)
	}
	var tree any
	if err := node.Decode(&tree); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", registry.ErrInvalid, name, err)
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s: a policy document is a mapping (granted_permissions: [...], allowed_effects: [...], ...), not %s", registry.ErrInvalid, name, kindOf(tree))
	}
	var p Policy
	for key, v := range obj {
		if err := setField(&p, key, v); err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", registry.ErrInvalid, name, key, err)
		}
	}
	return &p, nil
}

// fields are the keys of a policy document.
var fields = []string{"agent", "granted_permissions", "allowed_effects", "min_trust_tier", "require_approval"}

// setField sets the field of p a document key names.
func setField(p *Policy, key string, v any) error {
	var err error
	switch key {
	case "agent":
		p.Agent, err = stringOf(v)
	case "min_trust_tier":
		p.MinTrustTier, err = stringOf(v)
	case "granted_permissions":
		p.GrantedPermissions, err = listOf(v)
	case "allowed_effects":
		p.AllowedEffects, err = listOf(v)
	case "require_approval":
		p.RequireApproval, err = listOf(v)
	default:
		return fmt.Errorf("unknown field: a policy has %s", strings.Join(fields, ", "))
	}
	return err
}

func stringOf(v any) (string, error) {
	s, ok := v.(string)
	switch {
	case v == nil:
		return "", nil
	case !ok:
		return "", fmt.Errorf("want a string, not %s", kindOf(v))
	case len(s) > MaxEntryLength:
		return "", fmt.Errorf("%d bytes, more than %d", len(s), MaxEntryLength)
	}
	return s, nil
}

func listOf(v any) ([]string, error) {
	if v == nil {
		return []string{}, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, not %s", kindOf(v))
	}
	if len(l) > MaxListEntries {
		return nil, fmt.Errorf("%d entries, more than %d", len(l), MaxListEntries)
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, err := stringOf(e)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %v", i, err)
		}
		if s == "" {
			return nil, fmt.Errorf("[%d] is empty: give a pattern such as network.* or *", i)
		}
		out[i] = s
	}
	return out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// List returns every stored policy, ordered by agent (the default policy,
// "*", first).
func (s *Policies) List(ctx context.Context) ([]*Policy, error) {
	docs, err := s.docs.ListDocs(ctx, policyKind, "")
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	out := make([]*Policy, 0, len(docs))
	for _, d := range docs {
		var p Policy
		if err := json.Unmarshal(d.Value, &p); err != nil {
			return nil, fmt.Errorf("the stored policy of agent %q is not valid JSON: %w (set the policy again)", d.Key, err)
		}
		out = append(out, &p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out, nil
}
