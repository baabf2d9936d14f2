package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caphub/caphub/internal/wait"
)

// Client is a Provider speaking the OpenAI embeddings API (POST
// /v1/embeddings), which OpenAI and most self-hosted servers (vLLM,
// Ollama, llama.cpp, text-embeddings-inference, LiteLLM) offer.
type Client struct {
	endpoint string
	where    string // the endpoint without its query, for messages
	opts     ClientOptions
	http     *http.Client
}

// ClientOptions configure a Client. URL and Model are required; the other
// fields have defaults.
type ClientOptions struct {
	// URL is the provider's base URL, e.g. https://api.openai.com: the
	// client posts to URL/v1/embeddings. A URL that already ends in /v1 gets
	// /embeddings, and one ending in /embeddings is used as it is. It is the
	// operator's setting: API callers never choose where the texts go.
	URL string
	// Model is the model asked for, sent as "model" and returned by Model.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer APIKey". It is
	// never logged nor written into an error.
	APIKey string
	// Timeout bounds each request, its answer included (default 30s).
	Timeout time.Duration
	// MaxBatch is the most texts one request carries (default 64); Embed
	// splits more into several requests.
	MaxBatch int
	// MaxInputBytes bounds one text (default 32 KiB): a longer one is
	// refused before anything is sent.
	MaxInputBytes int
	// MaxAnswerBytes bounds an answer's body (default 16 MiB).
	MaxAnswerBytes int64
	// Dimensions, when set, is the length every vector must have: an
	// answer with another length is an error.
	Dimensions int
	// SendDimensions asks the model for Dimensions-long vectors (the
	// request's "dimensions"), for models that can shorten theirs, such as
	// OpenAI's text-embedding-3 family.
	SendDimensions bool
	// Retries is how many more times a request answered 429 or 5xx is sent
	// (default 3; negative: none).
	Retries int
	// MinBackoff is the wait before the first retry, doubled after each
	// one up to MaxBackoff (defaults 500ms and 10s). A Retry-After header
	// replaces the wait; one longer than MaxRetryAfter (default 30s) ends
	// the retries, with the wait it asked for in the HTTPError.
	MinBackoff, MaxBackoff, MaxRetryAfter time.Duration
	// HTTPClient sends the requests (default: a client of its own, with
	// Timeout).
	HTTPClient *http.Client
}

// MaxDimensions bounds the length of a vector any answer may carry.
const MaxDimensions = 16384

// Defaults of ClientOptions.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxBatch       = 64
	DefaultMaxInputBytes  = 32 << 10
	DefaultMaxAnswerBytes = 16 << 20
	DefaultRetries        = 3
)

// errorBodyBytes bounds what is read of an error answer.
const errorBodyBytes = 64 << 10

// NewClient checks o and returns a Client.
func NewClient(o ClientOptions) (*Client, error) {
	endpoint, where, err := endpointOf(o.URL)
	if err != nil {
		return nil, err
	}
	if err := CheckModel(o.Model); err != nil {
		return nil, err
	}
	if o.Dimensions < 0 || o.Dimensions > MaxDimensions {
		return nil, fmt.Errorf("embedding dimensions %d: give a length between 1 and %d, or 0 to accept the model's", o.Dimensions, MaxDimensions)
	}
	if o.SendDimensions && o.Dimensions == 0 {
		return nil, errors.New("embedding options: SendDimensions needs Dimensions, the length to ask for")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.MaxAnswerBytes <= 0 {
		o.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(10*time.Second, o.MinBackoff)
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 30 * time.Second
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: o.Timeout}
	}
	return &Client{endpoint: endpoint, where: where, opts: o, http: hc}, nil
}

// endpointOf returns the embeddings endpoint of a base URL.
func endpointOf(base string) (endpoint, where string, err error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("embedding provider URL %q: give an http:// or https:// URL such as https://api.openai.com", base)
	}
	if u.User != nil {
		return "", "", fmt.Errorf("embedding provider URL %s: remove the user and password from the URL and give the API key instead", u.Redacted())
	}
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/embeddings"):
	case strings.HasSuffix(p, "/v1"):
		p += "/embeddings"
	default:
		p += "/v1/embeddings"
	}
	u.Path, u.RawPath, u.Fragment = p, "", ""
	endpoint = u.String()
	if u.RawQuery != "" {
		u.RawQuery = ""
		return endpoint, u.String() + "?…", nil
	}
	return endpoint, endpoint, nil
}

// CheckModel checks a model name: it keys the stored vectors, so it must be
// 1 to 200 bytes of printable text without spaces.
func CheckModel(model string) error {
	switch {
	case model == "":
		return errors.New("embedding model: give the model's name, e.g. text-embedding-3-small")
	case len(model) > 200:
		return fmt.Errorf("embedding model %.40q…: the name is longer than 200 bytes", model)
	case !utf8.ValidString(model):
		return fmt.Errorf("embedding model %q: the name is not valid UTF-8", model)
	}
	for _, r := range model {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("embedding model %q: the name contains a space or a control character", model)
		}
	}
	return nil
}

// Model returns the model asked for.
func (c *Client) Model() string { return c.opts.Model }

// Endpoint returns the URL the client posts to, without its query.
func (c *Client) Endpoint() string { return c.where }

// Embed returns the vectors of texts, in MaxBatch-long requests, each
// retried as the options say.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for i, t := range texts {
		if t == "" {
			return nil, fmt.Errorf("embed text %d: it is empty: the provider refuses empty input", i)
		}
		if len(t) > c.opts.MaxInputBytes {
			return nil, fmt.Errorf("embed text %d: %d bytes, over the limit of %d: shorten it", i, len(t), c.opts.MaxInputBytes)
		}
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("embed text %d: it is not valid UTF-8", i)
		}
	}
	out := make([][]float32, 0, len(texts))
	dims := c.opts.Dimensions
	for start := 0; start < len(texts); start += c.opts.MaxBatch {
		batch := texts[start:min(start+c.opts.MaxBatch, len(texts))]
		vecs, err := c.embedBatch(ctx, batch, dims)
		if err != nil {
			if len(texts) > len(batch) {
				return nil, fmt.Errorf("texts %d to %d of %d: %w", start, start+len(batch)-1, len(texts), err)
			}
			return nil, err
		}
		dims = len(vecs[0]) // every batch must agree with the first
		out = append(out, vecs...)
	}
	return out, nil
}

// embedBatch sends one request, again after a 429 or 5xx answer.
func (c *Client) embedBatch(ctx context.Context, texts []string, dims int) ([][]float32, error) {
	body, err := c.requestBody(texts)
	if err != nil {
		return nil, err
	}
	backoff := c.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		vecs, err := c.post(ctx, body, len(texts), dims)
		var he *HTTPError
		if err == nil || !errors.As(err, &he) || !he.Temporary() || attempt >= c.opts.Retries {
			return vecs, err
		}
		pause := backoff
		if he.RetryAfter > 0 {
			if he.RetryAfter > c.opts.MaxRetryAfter {
				return nil, err
			}
			pause = he.RetryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < pause {
			return nil, err // the wait would outlast the caller
		}
		if !wait.Sleep(ctx, pause) {
			return nil, fmt.Errorf("%w (gave up waiting to retry: %v)", err, ctx.Err())
		}
		backoff = min(backoff*2, c.opts.MaxBackoff)
	}
}

// request is the body of POST /v1/embeddings.
type request struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

func (c *Client) requestBody(texts []string) ([]byte, error) {
	r := request{Model: c.opts.Model, Input: texts}
	if c.opts.SendDimensions {
		r.Dimensions = c.opts.Dimensions
	}
	return json.Marshal(r)
}

// post sends one request and reads its answer.
func (c *Client) post(ctx context.Context, body []byte, n, dims int) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embedding provider %s: %w", c.where, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, whose query may hold a secret
		}
		return nil, fmt.Errorf("embedding provider %s: %w: is it running and reachable?", c.where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
		return nil, &HTTPError{
			URL: c.where, Status: resp.StatusCode,
			Message:    providerMessage(data),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
		}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("embedding provider %s: read the answer: %w", c.where, err)
	}
	if int64(len(data)) > c.opts.MaxAnswerBytes {
		return nil, fmt.Errorf("embedding provider %s: the answer to %d texts is larger than %d bytes: send fewer texts per request (MaxBatch) or raise MaxAnswerBytes", c.where, n, c.opts.MaxAnswerBytes)
	}
	vecs, err := parseAnswer(data, n, dims)
	if err != nil {
		return nil, fmt.Errorf("embedding provider %s (model %s): %w", c.where, c.opts.Model, err)
	}
	return vecs, nil
}

// HTTPError is an answer of the provider other than 2xx.
type HTTPError struct {
	URL    string
	Status int
	// Message is the provider's error message, or the start of its answer.
	Message string
	// RetryAfter is the wait the provider asked for (Retry-After), 0 when
	// it asked for none.
	RetryAfter time.Duration
}

// Error says who answered what, and what to do.
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("embedding provider %s answered HTTP %d", e.URL, e.Status)
	if t := http.StatusText(e.Status); t != "" {
		msg += " " + t
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		msg += " (check the API key)"
	case e.Status == http.StatusNotFound:
		msg += " (check the URL and the model)"
	case e.RetryAfter > 0:
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// Temporary reports whether the request may succeed later: 429 and 5xx.
func (e *HTTPError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// messageBytes bounds the provider's message in an error.
const messageBytes = 300

// providerMessage returns the message of an error answer: the OpenAI
// shape {"error":{"message":…}}, {"error":"…"} or {"message":…}, else the
// start of the body as text.
func providerMessage(data []byte) string {
	var shaped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(data, &shaped) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(shaped.Error, &inner) == nil && inner.Message != "":
			return clip(inner.Message)
		case json.Unmarshal(shaped.Error, &s) == nil && s != "":
			return clip(s)
		case shaped.Message != "":
			return clip(shaped.Message)
		case shaped.Detail != "":
			return clip(shaped.Detail)
		}
	}
	return clip(string(data))
}

// clip makes s one printable line of at most messageBytes.
func clip(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) <= messageBytes {
		return s
	}
	cut := messageBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// answer is the body of a 2xx answer.
type answer struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// parseAnswer reads the vectors of an answer to n texts, in the order of
// the texts (by each item's index): exactly n of them, all of one length,
// dims when dims > 0, at most MaxDimensions.
func parseAnswer(data []byte, n, dims int) ([][]float32, error) {
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("the answer is not an embeddings answer ({\"data\":[{\"index\":0,\"embedding\":[…]}]}): %w", err)
	}
	if len(a.Data) != n {
		return nil, fmt.Errorf("the answer has %d vectors for %d texts", len(a.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range a.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		switch {
		case at < 0 || at >= n:
			return nil, fmt.Errorf("item %d of the answer has index %d, outside 0 to %d", i, at, n-1)
		case out[at] != nil:
			return nil, fmt.Errorf("the answer has two vectors for text %d", at)
		case len(d.Embedding) == 0:
			return nil, fmt.Errorf("the vector of text %d is empty", at)
		case len(d.Embedding) > MaxDimensions:
			return nil, fmt.Errorf("the vector of text %d has %d dimensions, over the limit of %d", at, len(d.Embedding), MaxDimensions)
		case dims > 0 && len(d.Embedding) != dims:
			return nil, fmt.Errorf("the vector of text %d has %d dimensions, not the %d expected: check the model and the configured dimensions", at, len(d.Embedding), dims)
		}
		dims = len(d.Embedding)
		out[at] = d.Embedding
	}
	return out, nil
}
