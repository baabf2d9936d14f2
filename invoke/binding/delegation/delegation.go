// Package delegation is the delegation binding: it hands a call to another
// caphub (binding url: POST {url}/v1/invoke) or to an A2A agent (binding
// agent: a JSON-RPC message/send to the agent's endpoint).
//
// A URL a definition gives (url, or agent as a URL) must be allowed by
// Options.AllowedHosts, loopback only when empty, as for the http binding:
// a registered definition must not make caphub post to arbitrary hosts.
// Agents the operator configured by name (Options.Agents) are trusted
// wherever they are. token_env sends a bearer token read from caphub's
// environment.
package delegation

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/internal/allowlist"
	"github.com/caphub/caphub/internal/permit"
	"github.com/caphub/caphub/internal/tracing"
	"github.com/caphub/caphub/invoke"
)

// Options configure the binding.
type Options struct {
	Client *http.Client
	// Agents maps A2A agent names to their JSON-RPC endpoints; an agent
	// given as an http(s) URL is used as is.
	Agents map[string]string
	// MaxResponseBytes bounds an answer. Default 16 MiB.
	MaxResponseBytes int64
	// AllowedHosts are the hosts a definition's own URLs may reach (see
	// allowlist.Allowed); EMPTY MEANS LOOPBACK ONLY. Configured Agents
	// are not checked.
	AllowedHosts []string
	// Getenv reads token_env variables (os.LookupEnv when nil).
	Getenv func(string) (string, bool)
}

// hostsSetting is where the allow-list is configured, for messages.
const hostsSetting = "delegation Options.AllowedHosts; caphub serve --allow-host"

// Binding delegates calls.
type Binding struct {
	opts Options
	// restricted sends to the URLs definitions give: its dialer reaches
	// loopback only when no hosts are allowed; trusted sends to the
	// configured agents.
	restricted, trusted *http.Client
}

// New returns a delegation binding.
func New(opts Options) *Binding {
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 16 << 20
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	b := &Binding{opts: opts, restricted: opts.Client, trusted: opts.Client}
	if b.trusted == nil {
		b.trusted = &http.Client{}
	}
	if b.restricted == nil {
		b.restricted = allowlist.Client(len(opts.AllowedHosts) == 0, hostsSetting)
	}
	// Redirects stay within the allow-list too.
	r := *b.restricted
	r.CheckRedirect = allowlist.CheckRedirect(opts.AllowedHosts, hostsSetting, "Authorization")
	b.restricted = &r
	return b
}

// target is where a call is delegated and how.
type target struct {
	url    string
	client *http.Client
	token  string
}

// dest checks a URL a definition gave and picks the restricted client.
func (b *Binding) dest(raw string, d *capability.DelegationBinding) (target, error) {
	t := target{url: raw, client: b.restricted}
	u, err := url.Parse(raw)
	if err != nil {
		return t, invoke.Errorf(invoke.CodeNoBinding, false, "delegation url %q: %v", raw, err)
	}
	if err := allowlist.CheckURL(b.opts.AllowedHosts, u, hostsSetting); err != nil {
		return t, &invoke.Error{Code: invoke.CodeNoBinding, Binding: capability.BindingDelegation, Message: "delegation: " + err.Error(), Cause: err}
	}
	return t, b.withToken(&t, d)
}

// withToken reads the token the binding names, if any.
func (b *Binding) withToken(t *target, d *capability.DelegationBinding) error {
	if d.TokenEnv == "" {
		return nil
	}
	v, ok := b.opts.Getenv(d.TokenEnv)
	if !ok || v == "" {
		return invoke.Errorf(invoke.CodeNoBinding, false, "the delegation binding sends the token in $%s, which is not available (unset, empty, or not allowed): %s", d.TokenEnv, permit.EnvHint(d.TokenEnv))
	}
	t.token = v
	return nil
}

// Kind is "delegation".
func (b *Binding) Kind() string { return capability.BindingDelegation }

// Invoke delegates the call.
func (b *Binding) Invoke(ctx context.Context, call *invoke.Call) (*invoke.Outcome, error) {
	d := call.Definition.Bindings.Delegation
	if d == nil {
		return nil, invoke.Errorf(invoke.CodeNoBinding, false, "%s has no delegation binding", call.URI)
	}
	capURI := d.Capability
	if capURI == "" {
		capURI = call.URI
	}
	if d.URL != "" {
		t, err := b.dest(d.URL, d)
		if err != nil {
			return nil, err
		}
		return b.caphub(ctx, t, capURI, call.Input)
	}
	var t target
	if strings.HasPrefix(d.Agent, "http://") || strings.HasPrefix(d.Agent, "https://") {
		var err error
		if t, err = b.dest(d.Agent, d); err != nil {
			return nil, err
		}
	} else {
		endpoint, ok := b.opts.Agents[d.Agent]
		if !ok {
			return nil, invoke.Errorf(invoke.CodeNoBinding, false, "A2A agent %q is not configured: give its endpoint URL in the binding or in the server's A2A agent settings (--a2a-agent NAME=URL)", d.Agent)
		}
		t = target{url: endpoint, client: b.trusted}
		if err := b.withToken(&t, d); err != nil {
			return nil, err
		}
	}
	return b.a2a(ctx, t, capURI, call.Input)
}

func (b *Binding) post(ctx context.Context, t target, body any) (int, []byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	end := tracing.StartClient(req, "delegation")
	resp, err := t.client.Do(req)
	end(resp, err)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, nil, &invoke.Error{Code: invoke.CodeTimeout, Retryable: true, Message: "the delegate did not answer in time", Cause: err}
		}
		if errors.Is(err, allowlist.ErrNotAllowed) {
			return 0, nil, &invoke.Error{Code: invoke.CodeNoBinding, Binding: capability.BindingDelegation, Message: fmt.Sprintf("delegate %s: %v", allowlist.Redact(req.URL), err), Cause: err}
		}
		return 0, nil, &invoke.Error{Code: invoke.CodeUpstreamUnavailable, Retryable: true, Message: fmt.Sprintf("delegate %s: %v", t.url, err), Cause: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, b.opts.MaxResponseBytes+1))
	if err != nil {
		return 0, nil, err
	}
	if int64(len(out)) > b.opts.MaxResponseBytes {
		return 0, nil, fmt.Errorf("delegate %s answered more than %d bytes", t.url, b.opts.MaxResponseBytes)
	}
	return resp.StatusCode, out, nil
}

// caphub invokes on another caphub and passes its error code through.
func (b *Binding) caphub(ctx context.Context, t target, uri string, input map[string]any) (*invoke.Outcome, error) {
	base := t.url
	t.url = strings.TrimRight(base, "/") + "/v1/invoke"
	status, body, err := b.post(ctx, t, map[string]any{"uri": uri, "input": input})
	if err != nil {
		return nil, err
	}
	if status >= 400 {
		var p struct {
			Detail    string `json:"detail"`
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
		}
		_ = json.Unmarshal(body, &p)
		if p.Code == "" {
			p.Code = fmt.Sprintf("HTTP_%d", status)
			p.Retryable = status == 429 || status >= 502
		}
		if p.Detail == "" {
			p.Detail = strings.TrimSpace(string(body))
		}
		return nil, &invoke.Error{Code: p.Code, Retryable: p.Retryable, Message: "delegate caphub " + base + ": " + p.Detail}
	}
	var res struct {
		Output  any    `json:"output"`
		Binding string `json:"binding"`
		URI     string `json:"uri"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("delegate caphub %s answered something that is not an invocation result: %v", base, err)
	}
	return &invoke.Outcome{Output: capability.Normalize(res.Output), Meta: map[string]any{"delegate": base, "delegate_binding": res.Binding, "delegate_uri": res.URI}}, nil
}

// a2a sends message/send with the input as a data part and reads the reply:
// a message's (or a completed task's artifacts') data part is the output; text
// parts become {"text": …}.
func (b *Binding) a2a(ctx context.Context, t target, uri string, input map[string]any) (*invoke.Outcome, error) {
	endpoint := t.url
	id := randomID()
	req := map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "message/send",
		"params": map[string]any{
			"message": map[string]any{
				"kind": "message", "role": "user", "messageId": randomID(),
				"parts":    []any{map[string]any{"kind": "data", "data": input}},
				"metadata": map[string]any{"capability": uri},
			},
		},
	}
	status, body, err := b.post(ctx, t, req)
	if err != nil {
		return nil, err
	}
	if status >= 400 {
		return nil, &invoke.Error{Code: fmt.Sprintf("HTTP_%d", status), Retryable: status == 429 || status >= 502, Message: fmt.Sprintf("A2A agent %s: %s", endpoint, snippet(body))}
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("A2A agent %s answered something that is not JSON-RPC: %v", endpoint, err)
	}
	if resp.Error != nil {
		return nil, &invoke.Error{Code: invoke.CodeUpstreamError, Message: fmt.Sprintf("A2A agent %s: %s (JSON-RPC %d)", endpoint, resp.Error.Message, resp.Error.Code)}
	}
	var result struct {
		Kind   string `json:"kind"`
		Parts  []part `json:"parts"`
		Status struct {
			State   string `json:"state"`
			Message *struct {
				Parts []part `json:"parts"`
			} `json:"message"`
		} `json:"status"`
		Artifacts []struct {
			Parts []part `json:"parts"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(resp.Result, &result); err != nil {
		return nil, fmt.Errorf("A2A agent %s: the result is neither a message nor a task: %v", endpoint, err)
	}
	parts := result.Parts
	if result.Kind == "task" {
		switch result.Status.State {
		case "completed":
		case "failed", "rejected", "canceled":
			msg := result.Status.State
			if result.Status.Message != nil {
				if _, text := collect(result.Status.Message.Parts); text != "" {
					msg += ": " + text
				}
			}
			return nil, &invoke.Error{Code: invoke.CodeUpstreamError, Message: fmt.Sprintf("A2A agent %s: task %s", endpoint, msg)}
		default:
			return nil, &invoke.Error{Code: invoke.CodeUpstreamError, Message: fmt.Sprintf("A2A agent %s: the task is %s, not completed (caphub waits only for synchronous answers)", endpoint, result.Status.State)}
		}
		parts = nil
		for _, a := range result.Artifacts {
			parts = append(parts, a.Parts...)
		}
	}
	data, text := collect(parts)
	if data != nil {
		return &invoke.Outcome{Output: capability.Normalize(data), Meta: map[string]any{"a2a_agent": endpoint}}, nil
	}
	return &invoke.Outcome{Output: map[string]any{"text": text}, Meta: map[string]any{"a2a_agent": endpoint}}, nil
}

type part struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	Data any    `json:"data"`
}

func collect(parts []part) (any, string) {
	var texts []string
	for _, p := range parts {
		switch p.Kind {
		case "data":
			return p.Data, ""
		case "text":
			texts = append(texts, p.Text)
		}
	}
	return nil, strings.Join(texts, "\n")
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
