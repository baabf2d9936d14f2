// Package registry is caphub's registry: it registers capability versions
// under the versioning rules, resolves and negotiates URIs, lists, searches
// and deprecates, on top of a Store (store/sqlite or store/postgres).
package registry

import (
	"context"
	"log/slog"
	"time"

	"github.com/caphub/caphub/capability"
)

// Service is the registry's one entry point; the CLI, the REST server and
// the REST client all speak it.
type Service struct {
	store Store
	now   func() time.Time
	log   *slog.Logger

	cache       versionCache
	index       *searchIndex
	semantic    Semantic
	stopWatch   context.CancelFunc
	cacheActive bool
	recorder    ChangeRecorder
	group       groupCommit
	verify      func(context.Context, *capability.Definition) (string, error)
	observer    Observer
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces the clock (for tests that move past a sunset date).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithRecorder records every registration and deprecation with r's events,
// committed in the change's own transaction (see Store.PutAudited): a
// change whose events cannot be written is not made.
func WithRecorder(r ChangeRecorder) Option { return func(s *Service) { s.recorder = r } }

// Recorder returns the recorder of WithRecorder, nil when there is none, so
// that the registry's other writers (agents, saved servers) record their
// changes in the same audit chain.
func (s *Service) Recorder() ChangeRecorder { return s.recorder }

// WithVerifier sets the trust check of registration: check is called, with
// the registration's context (which says who registers: an API token, for
// one), on every definition of a batch once it is validated and completed
// (the content that will be stored) and returns its trust tier, which is
// stored in Record.TrustTier, or an error that refuses the definition with
// that reason, e.g. an attestation that does not verify
// (governance/sign.Verifier.Check). Without it, TrustTier stays "".
func WithVerifier(check func(ctx context.Context, d *capability.Definition) (tier string, err error)) Option {
	return func(s *Service) { s.verify = check }
}

// WithCache keeps the version lists that resolution reads, and the stored
// JSON of the single versions read, in memory, bounded (WithCacheLimits)
// and invalidated by the store's change notifications (see versionCache).
func WithCache() Option { return func(s *Service) { s.cacheActive = true } }

// NewService returns a registry over store.
func NewService(store Store, opts ...Option) *Service {
	s := &Service{store: store, now: time.Now, log: slog.Default()}
	s.cache.limits = DefaultCacheLimits
	s.cache.reset()
	for _, o := range opts {
		o(s)
	}
	if s.cacheActive || s.index != nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopWatch = cancel
		if s.cacheActive {
			go s.watch(ctx)
		}
		if s.index != nil {
			s.startIndex(ctx)
		}
	}
	return s
}

// Store returns the underlying store.
func (s *Service) Store() Store { return s.store }

// Close stops the cache's and the search index's watches and closes the
// store.
func (s *Service) Close() error {
	if s.stopWatch != nil {
		s.stopWatch()
	}
	return s.store.Close()
}
