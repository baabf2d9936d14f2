package testpeers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// RawSession speaks MCP's streamable HTTP by hand, as curl would: one POST
// per message, an answer read as JSON or as an SSE stream. Its failures
// go to T (use a T that panics in goroutines).
type RawSession struct {
	T      testing.TB
	URL    string
	Accept string      // default "application/json, text/event-stream"
	SID    string      // the session id, once initialised
	Header http.Header // sent with every message, besides MCP's own
	id     int
}

var rawClient = &http.Client{Timeout: 60 * time.Second}

// Post sends one message and returns the JSON-RPC answer to it ("" for a
// notification), failing on any other HTTP answer.
func (s *RawSession) Post(body string) string {
	s.T.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(body))
	if err != nil {
		s.T.Fatal(err)
	}
	for k, v := range s.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", s.accept())
	if s.SID != "" {
		req.Header.Set("Mcp-Session-Id", s.SID)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		s.T.Fatalf("POST %.200s: %v", body, err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.SID = sid
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return ""
	case resp.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(resp.Body)
		s.T.Fatalf("POST %.200s: %s %s", body, resp.Status, b)
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		return s.lastAnswer(resp.Body)
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (s *RawSession) accept() string {
	if s.Accept == "" {
		return "application/json, text/event-stream"
	}
	return s.Accept
}

// lastAnswer reads an SSE stream to its end and returns the data of its
// last message that is a response (it has an id and a result or error).
func (s *RawSession) lastAnswer(r io.Reader) string {
	s.T.Helper()
	var answer string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(data), &msg) == nil && msg.ID != nil && (msg.Result != nil || msg.Error != nil) {
			answer = strings.TrimSpace(data)
		}
	}
	if err := sc.Err(); err != nil {
		s.T.Fatalf("reading the SSE answer: %v", err)
	}
	return answer
}

// Initialize initialises the session with the client capabilities given
// (nil: none) and sends notifications/initialized.
func (s *RawSession) Initialize(capabilities map[string]any) {
	s.T.Helper()
	if capabilities == nil {
		capabilities = map[string]any{}
	}
	got := s.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": map[string]any{"name": "raw-http", "version": "1"}})
	if s.SID == "" || !strings.Contains(got, `"serverInfo"`) {
		s.T.Fatalf("initialize: session %q, answer %.500s", s.SID, got)
	}
	s.Post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// Call sends a request and returns its answer.
func (s *RawSession) Call(method string, params any) string {
	s.T.Helper()
	s.id++
	msg := map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	return s.Post(string(b))
}

// Listen opens the session's standalone stream (GET) and closes seen when
// a message holding want arrives on it; it returns when the stream ends.
func (s *RawSession) Listen(seen chan struct{}, want string) {
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.SID)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), want) && seen != nil {
			close(seen)
			seen = nil
		}
	}
}

// End DELETEs the session.
func (s *RawSession) End() {
	s.T.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.URL, nil)
	req.Header.Set("Mcp-Session-Id", s.SID)
	resp, err := rawClient.Do(req)
	if err != nil {
		s.T.Fatalf("DELETE: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		s.T.Errorf("DELETE: %s", resp.Status)
	}
}

// PanicT turns failures into panics, for a RawSession in a goroutine
// (recover them there and report).
type PanicT struct{ testing.TB }

func (p PanicT) Helper()                   {}
func (p PanicT) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (p PanicT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (p PanicT) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// PostInitialize POSTs an initialize to url outside any session and
// returns the HTTP status and body, whatever they are (a refusal, say).
func PostInitialize(t testing.TB, url string) (status int, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
