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
	var success []string
	var failures []string
	for _, k := range slices.Sorted(maps.Keys(resps)) {
		u := strings.ToUpper(k)
		switch {
		case len(k) == 3 && k[0] == '2' && isDigits(k), u == "2XX":
			success = append(success, k)
		case len(k) == 3 && (k[0] == '4' || k[0] == '5') && isDigits(k), u == "4XX", u == "5XX":
			failures = append(failures, k)
		}
	}
	sort.SliceStable(success, func(i, j int) bool { return successRank(success[i]) < successRank(success[j]) })
	outKey := ""
	if len(success) > 0 {
		outKey = success[0]
	} else if _, ok := resps["default"]; ok {
		outKey = "default"
	}
	if outKey != "default" {
		if _, ok := resps["default"]; ok {
			failures = append(failures, "default")
		}
	}
	output := map[string]any{"description": "the operation declares no success response"}
	size, ct := 1, ""
	if outKey != "" {
		r, err := im.conv.resolve(resps[outKey], "responses."+outKey)
		if err != nil {
			return nil, 0, "", nil, fmt.Errorf("responses.%s: %w", outKey, err)
		}
		var raw any
		has := false
		if im.version == swagger2 {
			raw, has = r["schema"]
			if has {
				produces := stringList(o.op["produces"])
				if produces == nil {
					produces = stringList(im.root["produces"])
				}
				ct = preferJSON(produces)
			}
		} else if content, ok := r["content"].(map[string]any); ok && len(content) > 0 {
			var media map[string]any
			ct, media = pickMedia(content)
			raw, has = media["schema"]
			if !has {
				raw, has = map[string]any{}, true
			}
		}
		if has {
			s, n, _, err := im.conv.schema(raw, 0)
			if err != nil {
				return nil, 0, "", nil, fmt.Errorf("responses.%s: %w", outKey, err)
			}
			m, ok := s.(map[string]any)
			if !ok {
				m = map[string]any{"allOf": []any{s}}
			}
			output, size = m, n
		} else {
			output = map[string]any{"description": "HTTP " + outKey + ": the response has no body"}
		}
	}
	var errs []capability.ErrorDef
	seen := map[string]bool{}
	for _, k := range failures {
		r, err := im.conv.resolve(resps[k], "responses."+k)
		if err != nil {
			return nil, 0, "", nil, fmt.Errorf("responses.%s: %w", k, err)
		}
		desc := strings.TrimSpace(str(r["description"]))
		code := errorCode(strings.ToUpper(k), desc)
		for n := 2; seen[code]; n++ {
			code = errorCode(strings.ToUpper(k), desc) + "_" + strconv.Itoa(n)
		}
		seen[code] = true
		if desc == "" {
			desc = "HTTP " + k
		}
		e := capability.ErrorDef{Code: code, Description: desc}
		if status, err := strconv.Atoi(k); err == nil {
			e.Retryable = retryable[status]
			e.Extra = map[string]any{"x-http-status": int64(status)}
		} else if k != "default" {
			e.Extra = map[string]any{"x-http-status": strings.ToUpper(k)}
		}
		errs = append(errs, e)
	}
	return output, size, ct, errs, nil
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
