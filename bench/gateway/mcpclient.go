package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
)

// A session is one MCP client session over streamable HTTP, kept as thin
// as the protocol allows (one POST per call, answers read as JSON or as an
// SSE stream) so that the client costs the same against every target and
// little of the machine's shared CPU.
type session struct {
	url     string
	id      string // Mcp-Session-Id; "" for a stateless server
	version string // the negotiated protocol version
	next    atomic.Int64
}

// protocolVersion is the version the sessions ask for; every gateway
// measured speaks it.
const protocolVersion = "2025-06-18"

// maxAnswer bounds the body of one answer read.
const maxAnswer = 1 << 20

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// openSession initializes a session at url.
func openSession(ctx context.Context, hc *http.Client, url string) (*session, error) {
	s := &session{url: url, version: protocolVersion}
	params := map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "caphub-bench-gateway", "version": "1"},
	}
	resp, res, err := s.do(ctx, hc, "initialize", params, true)
	if err != nil {
		return nil, fmt.Errorf("initialize at %s: %w", url, err)
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err == nil && init.ProtocolVersion != "" {
		s.version = init.ProtocolVersion
	}
	if _, _, err := s.do(ctx, hc, "notifications/initialized", nil, false); err != nil {
		return nil, fmt.Errorf("notifications/initialized at %s: %w", url, err)
	}
	return s, nil
}

// call sends a request and returns its result.
func (s *session) call(ctx context.Context, hc *http.Client, method string, params any) (json.RawMessage, error) {
	_, res, err := s.do(ctx, hc, method, params, true)
	return res, err
}

// callTool calls a tool; a tool error (isError) is an error.
func (s *session) callTool(ctx context.Context, hc *http.Client, name string, args json.RawMessage) error {
	res, err := s.call(ctx, hc, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return err
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("tools/call %s: the result is not a tool result: %w", name, err)
	}
	if r.IsError {
		msg := ""
		if len(r.Content) > 0 {
			msg = r.Content[0].Text
		}
		return fmt.Errorf("tools/call %s: tool error: %.200s", name, msg)
	}
	return nil
}

// close ends the session (DELETE), so the gateway may free what it holds
// for it (an upstream process, for some).
func (s *session) close(hc *http.Client) {
	if s.id == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, s.url, nil)
	if err != nil {
		return
	}
	s.headers(req)
	if resp, err := hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
	}
}

func (s *session) headers(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", s.version)
	}
}

// do posts one message; a request (wantAnswer) reads its answer.
func (s *session) do(ctx context.Context, hc *http.Client, method string, params any, wantAnswer bool) (*http.Response, json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	var id int64
	if wantAnswer {
		id = s.next.Add(1)
		msg["id"] = id
	}
	if params != nil {
		msg["params"] = params
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	s.headers(req)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxAnswer {
		return nil, nil, fmt.Errorf("%s: answer over %d bytes", method, maxAnswer)
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("%s: HTTP %s: %.300s", method, resp.Status, b)
	}
	if !wantAnswer {
		return resp, nil, nil
	}
	res, err := parseAnswer(resp.Header.Get("Content-Type"), b, id)
	return resp, res, err
}

// errNoAnswer is parseAnswer's error when the body does not hold the
// answer to the request.
var errNoAnswer = errors.New("no answer to the request in the body")

// parseAnswer finds the JSON-RPC answer with id in a streamable HTTP body:
// one JSON message, or an SSE stream whose events' data are messages (the
// server's requests and notifications before the answer are skipped).
func parseAnswer(contentType string, body []byte, id int64) (json.RawMessage, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "text/event-stream" {
		return answerOf(body, id)
	}
	var data []byte
	flush := func() (json.RawMessage, bool, error) {
		defer func() { data = data[:0] }()
		if len(data) == 0 {
			return nil, false, nil
		}
		res, err := answerOf(data, id)
		if errors.Is(err, errNoAnswer) {
			return nil, false, nil
		}
		return res, true, err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, maxAnswer+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if res, ok, err := flush(); ok {
				return res, err
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(v, " ")...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if res, ok, err := flush(); ok {
		return res, err
	}
	return nil, errNoAnswer
}

// answerOf reads one JSON-RPC message: its result when it answers id.
func answerOf(msg []byte, id int64) (json.RawMessage, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("not a JSON-RPC message: %w: %.200s", err, msg)
	}
	var got int64
	if json.Unmarshal(m.ID, &got) != nil || got != id {
		return nil, errNoAnswer
	}
	if m.Error != nil {
		return nil, m.Error
	}
	if m.Result == nil {
		return nil, fmt.Errorf("answer %d has neither result nor error", id)
	}
	return m.Result, nil
}

// resolveTool finds the name under which a target offers the upstream's
// tool: the name itself, else the one tool whose name ends in _tool, .tool
// or /tool (a gateway that prefixes its servers' names, like caphub's /mcp:
// mcp_everything_test_simple_text).
func resolveTool(ctx context.Context, hc *http.Client, s *session, tool string) (string, error) {
	var names []string
	cursor := ""
	for page := 0; page < 50; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		res, err := s.call(ctx, hc, "tools/list", params)
		if err != nil {
			return "", fmt.Errorf("tools/list: %w", err)
		}
		var l struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &l); err != nil {
			return "", fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range l.Tools {
			if t.Name == tool {
				return tool, nil
			}
			for _, sep := range []string{"_", ".", "/"} {
				if strings.HasSuffix(t.Name, sep+tool) {
					names = append(names, t.Name)
				}
			}
		}
		if cursor = l.NextCursor; cursor == "" {
			break
		}
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", fmt.Errorf("no tool named %s (or ending in _%s) in tools/list", tool, tool)
	default:
		return "", fmt.Errorf("several tools end in %s: %s", tool, strings.Join(names, ", "))
	}
}
