package openapi

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/caphub/caphub/capability"
)

// responses returns the output schema, its size and content type, and the
// declared errors.
//
// The output is the first success response of 200, 201, the other 2xx codes
// in ascending order, 2XX, and, only when there is no 2xx at all, default.
// Its schema is the one of its preferred content type (pickMedia); a
// response without a body gives {} described "the response has no body".
// Every 4xx and 5xx response, 4XX, 5XX and default (when it is not the
// output) is a declared error (see errorCode) whose Extra["x-http-status"]
// is the status (404) or range ("4XX"); 429, 502, 503 and 504 are
// retryable.
func (im *importer) responses(o *operation) (map[string]any, int, string, []capability.ErrorDef, error) {
	resps, _ := o.op["responses"].(map[string]any)
	outKey, failures := classifyResponses(resps)
	output := map[string]any{"description": "the operation declares no success response"}
	size, ct := 1, ""
	if outKey != "" {
		var err error
		if output, size, ct, err = im.output(o, resps[outKey], outKey); err != nil {
			return nil, 0, "", nil, err
		}
	}
	errs, err := im.errorDefs(resps, failures)
	if err != nil {
		return nil, 0, "", nil, err
	}
	return output, size, ct, errs, nil
}

// classifyResponses returns the key of the output response (see responses;
// "" when there is none) and the keys of the error responses.
func classifyResponses(resps map[string]any) (outKey string, failures []string) {
	var success []string
	for _, k := range slices.Sorted(maps.Keys(resps)) {
		switch {
		case isStatus(k, '2'):
			success = append(success, k)
		case isStatus(k, '4'), isStatus(k, '5'):
			failures = append(failures, k)
		}
	}
	sort.SliceStable(success, func(i, j int) bool { return successRank(success[i]) < successRank(success[j]) })
	_, hasDefault := resps["default"]
	switch {
	case len(success) > 0:
		outKey = success[0]
	case hasDefault:
		outKey = "default"
	}
	if outKey != "default" && hasDefault {
		failures = append(failures, "default")
	}
	return outKey, failures
}

// isStatus reports whether a response key is a status of the class (404)
// or the class's range (4XX).
func isStatus(k string, class byte) bool {
	return len(k) == 3 && k[0] == class && (isDigits(k) || strings.ToUpper(k[1:]) == "XX")
}

// output converts the output response: the schema of its preferred content
// type (Swagger 2.0: its schema, the content type from produces), else a
// schema that says the response has no body.
func (im *importer) output(o *operation, raw any, key string) (map[string]any, int, string, error) {
	r, err := im.conv.resolve(raw, "responses."+key)
	if err != nil {
		return nil, 0, "", fmt.Errorf("responses.%s: %w", key, err)
	}
	schema, ct, has := im.responseSchema(o, r)
	if !has {
		return map[string]any{"description": "HTTP " + key + ": the response has no body"}, 1, "", nil
	}
	s, n, err := im.conv.schema(schema, 0)
	if err != nil {
		return nil, 0, "", fmt.Errorf("responses.%s: %w", key, err)
	}
	m, ok := s.(map[string]any)
	if !ok {
		m = map[string]any{"allOf": []any{s}}
	}
	m, extra := im.conv.hoist(m)
	return m, addSize(n, extra), ct, nil
}

// responseSchema returns a response's schema and content type, has false
// when the response has no body.
func (im *importer) responseSchema(o *operation, r map[string]any) (schema any, ct string, has bool) {
	if im.version == swagger2 {
		schema, has = r["schema"]
		if has {
			ct = preferJSON(im.listOf(o, "produces"))
		}
		return schema, ct, has
	}
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		return nil, "", false
	}
	ct, media := pickMedia(content)
	schema, has = media["schema"]
	if !has {
		schema = map[string]any{}
	}
	return schema, ct, true
}

// listOf returns the operation's list of strings under key (produces,
// consumes, schemes), else the document's.
func (im *importer) listOf(o *operation, key string) []string {
	if l := stringList(o.op[key]); l != nil {
		return l
	}
	return stringList(im.root[key])
}

// errorDefs converts the error responses to declared errors, each with a
// unique code.
func (im *importer) errorDefs(resps map[string]any, failures []string) ([]capability.ErrorDef, error) {
	var errs []capability.ErrorDef
	seen := map[string]bool{}
	for _, k := range failures {
		r, err := im.conv.resolve(resps[k], "responses."+k)
		if err != nil {
			return nil, fmt.Errorf("responses.%s: %w", k, err)
		}
		desc := strings.TrimSpace(str(r["description"]))
		code := errorCode(strings.ToUpper(k), desc)
		for n := 2; seen[code]; n++ {
			code = errorCode(strings.ToUpper(k), desc) + "_" + strconv.Itoa(n)
		}
		seen[code] = true
		errs = append(errs, errorDef(k, code, orDefault(desc, "HTTP "+k)))
	}
	return errs, nil
}

// errorDef is the declared error of the response k, with its status (or
// range) and whether it is retryable.
func errorDef(k, code, desc string) capability.ErrorDef {
	e := capability.ErrorDef{Code: code, Description: desc}
	if status, err := strconv.Atoi(k); err == nil {
		e.Retryable = retryable[status]
		e.Extra = map[string]any{"x-http-status": int64(status)}
	} else if k != "default" {
		e.Extra = map[string]any{"x-http-status": strings.ToUpper(k)}
	}
	return e
}

// httpToken reports whether s is a valid HTTP header name (RFC 9110 token).
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

var retryable = map[int]bool{429: true, 502: true, 503: true, 504: true}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// successRank orders success responses: 200, 201, other 2xx ascending, 2XX.
func successRank(k string) int {
	switch k {
	case "200":
		return 0
	case "201":
		return 1
	}
	if n, err := strconv.Atoi(k); err == nil {
		return n
	}
	return 1000
}
