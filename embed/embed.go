// Package embed adds semantic ranking to the registry's search: an
// embedding provider turns each capability's text (Text) into a vector,
// the vectors are kept beside the versions in the registry's document store
// (PutVectors, LoadVectors), an Indexer keeps them current as versions are
// registered, and a Ranker orders capabilities by the cosine similarity of
// their vectors to a query's.
//
// It is optional and off by default: caphub serve runs it only when the
// operator configures a provider (--embed-url and --embed-model). The
// provider's address and key are the operator's settings; no API caller
// can change them. Lexical search works without it, and a provider that is
// down never blocks or fails a registration.
package embed

import (
	"context"

	"github.com/caphub/caphub/registry"
)

// Provider turns texts into vectors.
type Provider interface {
	// Embed returns one vector per text, in the order of texts, all of the
	// same length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model the vectors come from: vectors are stored and
	// compared per model, so a vector of one model is never compared with
	// another's.
	Model() string
}

// Scored is a version and the cosine similarity of its vector to a
// query's, in [-1, 1] (higher is nearer).
type Scored struct {
	Key        registry.Key
	Similarity float64
}
