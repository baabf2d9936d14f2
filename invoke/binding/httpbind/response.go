package httpbind

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/invoke"
	"github.com/caphub/caphub/invoke/binding/internal/bindutil"
)

// snippetBytes bounds the body text quoted in error messages; bodies up to
// detailBytes are also attached to errors decoded.
const (
	snippetBytes = 512
	detailBytes  = 16 << 10
)

// readCapped reads r up to max bytes; more is ErrResponseTooLarge.
func readCapped(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, ErrResponseTooLarge
	}
	return data, nil
}

// decodeBody turns a success response body into the output (see the
// package doc, Response).
func decodeBody(data []byte, contentType string) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	mt := mediaType(contentType)
	if isJSONType(mt) {
		v, err := decodeJSON(data)
		if err != nil {
			return nil, fmt.Errorf("the body is not valid JSON although its Content-Type says so (%v)", err)
		}
		return v, nil
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); t[0] == '{' || t[0] == '[' {
		if v, err := decodeJSON(data); err == nil {
			return v, nil
		}
	}
	if utf8.Valid(data) {
		return map[string]any{"text": string(data)}, nil
	}
	return map[string]any{"base64": base64.StdEncoding.EncodeToString(data), "content_type": contentType}, nil
}

// decodeJSON decodes exactly one JSON value, numbers normalised.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return capability.Normalize(v), nil
}

// statusError classifies a non-2xx response (see the package doc, Status).
func statusError(def *capability.Definition, resp *http.Response, data []byte, r *request) *invoke.Error {
	status := resp.StatusCode
	code, retryable, desc := "HTTP_"+strconv.Itoa(status), retryableStatus(status), ""
	if d := declaredFor(def, status); d != nil {
		code, retryable, desc = d.Code, d.Retryable, d.Description
	}
	details := map[string]any{"status": status}
	snippet := bindutil.Snippet(data, snippetBytes)
	if len(data) > 0 && len(data) <= detailBytes {
		if v, err := decodeJSON(data); err == nil {
			details["body"] = v
		}
	}
	if _, ok := details["body"]; !ok && snippet != "" {
		details["body"] = snippet
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		details["retry_after"] = ra
	}
	msg := fmt.Sprintf("%s %s answered HTTP %d", r.method, redact(r.url), status)
	if t := http.StatusText(status); t != "" {
		msg += " " + t
	}
	if desc != "" {
		msg += " (" + desc + ")"
	}
	if snippet != "" {
		msg += ": " + snippet
	}
	return &invoke.Error{Code: code, Retryable: retryable, Binding: Kind, Message: msg, Details: details}
}

// retryableStatus reports the statuses that say "try again later".
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// declaredFor returns def's declared error for an HTTP status, by the tiers
// of the package doc: x-http-status exact, x-http-status class,
// HTTP_<status>[_…], HTTP_<class>[_…], HTTP_ERROR.
func declaredFor(def *capability.Definition, status int) *capability.ErrorDef {
	if def == nil || len(def.Errors) == 0 {
		return nil
	}
	s := strconv.Itoa(status)
	class := s[:1] + "XX"
	tiers := []func(e *capability.ErrorDef) bool{
		func(e *capability.ErrorDef) bool { return statusListed(e.Extra[ExtraHTTPStatus], s) },
		func(e *capability.ErrorDef) bool { return statusListed(e.Extra[ExtraHTTPStatus], class) },
		func(e *capability.ErrorDef) bool { return codeFor(e.Code, s) },
		func(e *capability.ErrorDef) bool { return codeFor(strings.ToUpper(e.Code), class) },
		func(e *capability.ErrorDef) bool { return e.Code == "HTTP_ERROR" },
	}
	for _, match := range tiers {
		for i := range def.Errors {
			if match(&def.Errors[i]) {
				return &def.Errors[i]
			}
		}
	}
	return nil
}

// codeFor reports whether code is HTTP_<key> or HTTP_<key>_<anything>.
func codeFor(code, key string) bool {
	p := "HTTP_" + key
	return code == p || strings.HasPrefix(code, p+"_")
}

// statusListed reports whether an x-http-status value (a number, a string,
// or a list of them) names want ("404" or "4XX").
func statusListed(v any, want string) bool {
	switch x := v.(type) {
	case nil:
		return false
	case []any:
		for _, e := range x {
			if statusListed(e, want) {
				return true
			}
		}
		return false
	case string:
		return strings.EqualFold(strings.TrimSpace(x), want)
	case int64:
		return strconv.FormatInt(x, 10) == want
	case int:
		return strconv.Itoa(x) == want
	case float64:
		return x == float64(int64(x)) && strconv.FormatInt(int64(x), 10) == want
	case json.Number:
		return x.String() == want
	}
	return false
}
