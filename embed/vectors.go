package embed

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/caphub/caphub/registry"
)

// DocKind is the kind of the documents (registry.DocStore) that hold the
// vectors: one per version and model, beside the version itself, in both
// stores and without a table of its own.
const DocKind = "embedding"

// shards is how many key ranges the vectors of a model are spread over, so
// that LoadVectors reads them a range at a time (a few hundred documents
// per range at 100,000 vectors) instead of all at once.
const shards = 256

// Vector is the vector of one version.
type Vector struct {
	Key    registry.Key
	Vector []float32
}

// vectorDoc is a stored vector: the version, the model, and the vector as
// base64 of little-endian float32s (about 5.3 bytes a dimension, a quarter
// of JSON numbers).
type vectorDoc struct {
	Scheme  string `json:"scheme"`
	Domain  string `json:"domain"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Model   string `json:"model"`
	Dims    int    `json:"dims"`
	Vector  string `json:"vector"`
}

// docKey is the document key of a version's vector: the model, a shard
// (two hex digits of a hash of the version), and the version.
func docKey(model string, k registry.Key) string {
	return shardPrefix(model, shardOf(k)) + k.String()
}

func shardOf(k registry.Key) int {
	sum := sha256.Sum256([]byte(k.String()))
	return int(sum[0]) % shards
}

func shardPrefix(model string, shard int) string {
	return model + " " + hex.EncodeToString([]byte{byte(shard)}) + " "
}

// encodeVector is the document of v.
func encodeVector(model string, v Vector) ([]byte, error) {
	if len(v.Vector) == 0 || len(v.Vector) > MaxDimensions {
		return nil, fmt.Errorf("vector of %s: %d dimensions: a vector has 1 to %d", v.Key, len(v.Vector), MaxDimensions)
	}
	raw := make([]byte, 4*len(v.Vector))
	for i, f := range v.Vector {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("vector of %s: dimension %d is %v: a vector holds finite numbers", v.Key, i, f)
		}
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	return json.Marshal(vectorDoc{
		Scheme: v.Key.Scheme, Domain: v.Key.Domain, Name: v.Key.Name, Version: v.Key.Version,
		Model: model, Dims: len(v.Vector), Vector: base64.StdEncoding.EncodeToString(raw),
	})
}

// decodeVector reads a document of encodeVector, checking that it is a
// vector of model.
func decodeVector(model string, data []byte) (Vector, error) {
	var d vectorDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return Vector{}, fmt.Errorf("not a stored vector: %w", err)
	}
	if d.Model != model {
		return Vector{}, fmt.Errorf("a vector of model %q, not %q", d.Model, model)
	}
	if d.Dims <= 0 || d.Dims > MaxDimensions || base64.StdEncoding.DecodedLen(len(d.Vector)) < 4*d.Dims || base64.StdEncoding.DecodedLen(len(d.Vector)) > 4*d.Dims+2 {
		return Vector{}, fmt.Errorf("a vector of %d dimensions in %d base64 bytes", d.Dims, len(d.Vector))
	}
	raw, err := base64.StdEncoding.DecodeString(d.Vector)
	if err != nil || len(raw) != 4*d.Dims {
		return Vector{}, fmt.Errorf("the vector is not %d little-endian float32s in base64", d.Dims)
	}
	v := Vector{Key: registry.Key{Scheme: d.Scheme, Domain: d.Domain, Name: d.Name, Version: d.Version}, Vector: make([]float32, d.Dims)}
	for i := range v.Vector {
		v.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if f := float64(v.Vector[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return Vector{}, fmt.Errorf("dimension %d of the vector is %v", i, f)
		}
	}
	return v, nil
}

// PutVectors stores the vectors of model, one document each, in one
// transaction, replacing those stored before.
func PutVectors(ctx context.Context, docs registry.DocStore, model string, vs []Vector) error {
	if err := CheckModel(model); err != nil {
		return err
	}
	ops := make([]registry.DocOp, len(vs))
	for i, v := range vs {
		value, err := encodeVector(model, v)
		if err != nil {
			return err
		}
		ops[i] = registry.DocOp{Kind: DocKind, Key: docKey(model, v.Key), Value: value}
	}
	if err := docs.ApplyDocs(ctx, ops); err != nil {
		return fmt.Errorf("store %d vectors of model %s: %w", len(vs), model, err)
	}
	return nil
}

// GetVector returns the vector of model stored for k; the error wraps
// registry.ErrNotFound when there is none.
func GetVector(ctx context.Context, docs registry.DocStore, model string, k registry.Key) ([]float32, error) {
	if err := CheckModel(model); err != nil {
		return nil, err
	}
	d, err := docs.GetDoc(ctx, DocKind, docKey(model, k))
	if err != nil {
		return nil, fmt.Errorf("vector of %s (model %s): %w", k, model, err)
	}
	v, err := decodeVector(model, d.Value)
	if err == nil && v.Key != k {
		err = fmt.Errorf("the document holds the vector of %s", v.Key)
	}
	if err != nil {
		return nil, fmt.Errorf("vector of %s (model %s): %w", k, model, err)
	}
	return v.Vector, nil
}

// LoadVectors calls each with every vector of model stored, a key range at
// a time, so that only one range's documents are in memory at once. A
// document that does not decode is skipped and counted in the returned
// number, never an error: it is embedded again. An error of each stops the
// load and is returned.
func LoadVectors(ctx context.Context, docs registry.DocStore, model string, each func(Vector) error) (skipped int, err error) {
	if err := CheckModel(model); err != nil {
		return 0, err
	}
	for s := range shards {
		list, err := docs.ListDocs(ctx, DocKind, shardPrefix(model, s))
		if err != nil {
			return skipped, fmt.Errorf("load the vectors of model %s: %w", model, err)
		}
		for _, d := range list {
			v, err := decodeVector(model, d.Value)
			if err != nil || d.Key != docKey(model, v.Key) {
				skipped++
				continue
			}
			if err := each(v); err != nil {
				return skipped, err
			}
		}
		if err := ctx.Err(); err != nil {
			return skipped, err
		}
	}
	return skipped, nil
}
