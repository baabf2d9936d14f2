package registry

import (
	"context"

	"github.com/caphub/caphub/capability"
)

// API is what the CLI needs of a registry. *Service implements it on a local
// database; client.Client implements it against a running `caphub serve`.
type API interface {
	RegisterBatch(ctx context.Context, defs []capability.Definition) ([]RegisterResult, error)
	// Import registers many definitions each on its own in effect (see
	// Service.Import), calling progress as it goes.
	Import(ctx context.Context, defs []capability.Definition, progress func(ImportProgress)) (ImportResult, error)
	Resolve(ctx context.Context, uri string) (Resolution, error)
	Negotiate(ctx context.Context, req capability.NegotiationRequest) (capability.NegotiationResponse, error)
	Get(ctx context.Context, scheme, domain, name, version string) (Record, error)
	Versions(ctx context.Context, scheme, domain, name string) ([]Record, error)
	List(ctx context.Context, f ListFilter) (Page, error)
	Search(ctx context.Context, q SearchQuery) (Page, error)
	Deprecate(ctx context.Context, scheme, domain, name, version string, req DeprecateRequest) (DeprecateResult, error)
	Close() error
}

var _ API = (*Service)(nil)

// KeyOf derives the store key of a definition from its URI and version.
func KeyOf(d *capability.Definition) (Key, error) {
	u, err := capability.ParseURI(d.URI)
	if err != nil {
		return Key{}, err
	}
	v, err := capability.ParseVersion(d.Version)
	if err != nil {
		return Key{}, err
	}
	return Key{Scheme: u.Scheme, Domain: u.Domain, Name: u.Name, Version: v.Full()}, nil
}
