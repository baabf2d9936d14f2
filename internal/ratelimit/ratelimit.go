// Package ratelimit bounds how fast one caller may call caphub: a token
// bucket per key (an API token, an agent), refilled at a steady rate up to
// a burst. A request over the limit is answered 429 with Retry-After, so a
// well-behaved client waits instead of retrying at once.
package ratelimit

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/caphub/caphub/internal/problem"
)

// MaxKeys bounds the buckets a Limiter keeps: past it, the buckets that
// have refilled (whose callers have been quiet) are dropped, since a full
// bucket and no bucket allow the same. Keys may come from request headers
// on a server that does not require tokens, so their number must not grow
// without bound.
const MaxKeys = 100_000

// Limiter is a set of token buckets, one per key, each refilled at Rate
// per second up to Burst.
type Limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a Limiter allowing rate requests per second per key, with
// bursts of up to burst (at least 1); nil when rate is 0 or less: no limit.
func New(rate float64, burst int) *Limiter {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil
	}
	return &Limiter{rate: rate, burst: float64(max(burst, 1)), now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes one token from key's bucket. When the bucket is empty it
// returns false and how long until a token is there.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= MaxKeys {
			l.dropFull(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// dropFull forgets the buckets that have refilled by now; if none has,
// the oldest half goes (their callers are then allowed a burst again).
func (l *Limiter) dropFull(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) < MaxKeys {
		return
	}
	var total time.Duration
	for _, b := range l.buckets {
		total += now.Sub(b.last) / time.Duration(len(l.buckets))
	}
	for k, b := range l.buckets {
		if now.Sub(b.last) >= total {
			delete(l.buckets, k)
		}
	}
}

// Rule is one limit of Middleware: Key names the bucket of a request
// ("" exempts it), Kind names the limit in answers and metrics.
type Rule struct {
	Kind    string // "token", "agent"
	Limiter *Limiter
	Key     func(r *http.Request) string
}

// Middleware answers a request over any of rules' limits with 429, a
// Retry-After header (whole seconds, at least 1) and a problem document
// naming the limit; limited is called with the rule's kind (for metrics).
// Rules with a nil Limiter are off.
func Middleware(rules []Rule, limited func(kind string), next http.Handler) http.Handler {
	var on []Rule
	for _, r := range rules {
		if r.Limiter != nil {
			on = append(on, r)
		}
	}
	if len(on) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, rule := range on {
			key := rule.Key(r)
			if key == "" {
				continue
			}
			ok, wait := rule.Limiter.Allow(rule.Kind + "\x00" + key)
			if ok {
				continue
			}
			if limited != nil {
				limited(rule.Kind)
			}
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			_ = problem.Write(w, http.StatusTooManyRequests, &problem.Document{
				Type: problem.Base + "rate-limited", Title: "Too many requests", Status: http.StatusTooManyRequests,
				Detail: fmt.Sprintf("the %s %s sends requests faster than the server allows (%g per second, bursts of %g): retry after %d s; the operator sets the limit (caphub serve --rate-limit-%s)",
					rule.Kind, key, rule.Limiter.rate, rule.Limiter.burst, secs, rule.Kind),
				Instance: r.URL.Path,
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}
