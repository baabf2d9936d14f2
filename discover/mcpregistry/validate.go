package mcpregistry

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxProblems bounds the problems reported for one entry.
const maxProblems = 20

var (
	serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	sha256RE     = regexp.MustCompile(`^[a-f0-9]{64}$`)
	iconSizeRE   = regexp.MustCompile(`^(\d+x\d+|any)$`)
)

// problems collects the problems of one entry.
type problems []*Error

func (p *problems) add(path, format string, args ...any) {
	if len(*p) < maxProblems {
		*p = append(*p, &Error{Path: path, Message: fmt.Sprintf(format, args...)})
	}
}

// Validate checks a server.json against the published schema (2025-12-11)
// and returns every problem, each with the path of the value and what to
// do (nil when there is none).
func Validate(s *Server) []*Error {
	var p problems
	checkName(&p, s.Name)
	checkLength(&p, "description", s.Description, true)
	if s.Title != "" {
		checkLength(&p, "title", s.Title, false)
	}
	checkVersion(&p, "version", s.Version, true)
	if len(s.Version) > 255 {
		p.add("version", "is %d characters long, more than 255", len(s.Version))
	}
	if s.WebsiteURL != "" {
		checkURL(&p, "websiteUrl", s.WebsiteURL)
	}
	if s.Repository != nil {
		checkRepository(&p, s.Repository)
	}
	for i := range s.Icons {
		checkIcon(&p, fmt.Sprintf("icons[%d]", i), &s.Icons[i])
	}
	if len(s.Packages) > MaxPackages {
		p.add("packages", "%d packages, more than the %d caphub reads", len(s.Packages), MaxPackages)
	} else {
		for i := range s.Packages {
			checkPackage(&p, fmt.Sprintf("packages[%d]", i), &s.Packages[i])
		}
	}
	if len(s.Remotes) > MaxPackages {
		p.add("remotes", "%d remotes, more than the %d caphub reads", len(s.Remotes), MaxPackages)
	} else {
		for i := range s.Remotes {
			checkRemote(&p, fmt.Sprintf("remotes[%d]", i), &s.Remotes[i])
		}
	}
	return p
}

// checkName checks a server's name: NAMESPACE/NAME in reverse-DNS form.
func checkName(p *problems, n string) {
	switch {
	case n == "":
		p.add("name", "is missing: give the server's name in reverse-DNS form, e.g. io.github.owner/server")
	case len(n) < 3 || len(n) > 200:
		p.add("name", "%q must be 3 to 200 characters long", n)
	case !serverNameRE.MatchString(n):
		p.add("name", "%q must be NAMESPACE/NAME in reverse-DNS form, e.g. io.github.owner/server: letters, digits, '.' and '-' before the one '/', and also '_' after it", n)
	}
}

// checkRepository checks a server's repository: a URL and its host's name.
func checkRepository(p *problems, r *Repository) {
	if r.URL == "" {
		p.add("repository.url", "is missing: give the URL of the source code (or leave repository out)")
	} else {
		checkURL(p, "repository.url", r.URL)
	}
	if r.Source == "" {
		p.add("repository.source", "is missing: name the hosting service, e.g. github")
	}
}

// checkIcon checks one icon: an https URL, its sizes and its theme.
func checkIcon(p *problems, path string, ic *Icon) {
	if ic.Src == "" {
		p.add(path+".src", "is missing: give the icon's https URL")
	} else if len(ic.Src) > 255 || !strings.HasPrefix(ic.Src, "https://") {
		p.add(path+".src", "%q must be an https URL of at most 255 characters", truncate(ic.Src, 80))
	}
	for j, size := range ic.Sizes {
		if !iconSizeRE.MatchString(size) {
			p.add(fmt.Sprintf("%s.sizes[%d]", path, j), "%q must be WIDTHxHEIGHT (48x48) or any", size)
		}
	}
	if ic.Theme != "" && ic.Theme != "light" && ic.Theme != "dark" {
		p.add(path+".theme", "%q must be light or dark", ic.Theme)
	}
}

// checkLength checks a description or title: 1 to 100 characters.
func checkLength(p *problems, path, v string, required bool) {
	n := utf8.RuneCountInString(v)
	switch {
	case n == 0 && required:
		p.add(path, "is missing: say in one line (at most 100 characters) what the server does")
	case n > 100:
		p.add(path, "is %d characters long: the schema allows at most 100, so shorten it", n)
	}
}

// checkVersion checks a server's or a package's version: one specific
// version, not a range and not "latest".
func checkVersion(p *problems, path, v string, required bool) {
	switch {
	case v == "":
		if required {
			p.add(path, "is missing: give one specific version, e.g. 1.0.2")
		}
	case v == "latest":
		p.add(path, "is \"latest\": give one specific version, e.g. 1.0.2 (the registry refuses \"latest\")")
	case isRange(v):
		p.add(path, "%q is a version range: give one specific version, e.g. 1.0.2", v)
	}
}

// isRange reports whether v looks like a version range (^1.2, ~1.2, >=1,
// 1.x, 1.*, a || b, a - b) rather than one version.
func isRange(v string) bool {
	if strings.ContainsAny(v[:1], "^~<>=") || strings.Contains(v, "||") || strings.Contains(v, " ") {
		return true
	}
	for _, part := range strings.Split(v, ".") {
		if part == "x" || part == "X" || part == "*" {
			return true
		}
	}
	return false
}

// checkURL checks an absolute http(s) URL.
func checkURL(p *problems, path, v string) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(path, "%q must be an absolute http(s) URL", truncate(v, 80))
	}
}

func checkPackage(p *problems, path string, pkg *Package) {
	switch pkg.RegistryType {
	case "":
		p.add(path+".registryType", "is missing: give npm, pypi, nuget, oci or mcpb (server.json files before 2025-09-16 wrote registry_type: rename the fields to camelCase)")
	case TypeNPM, TypePyPI, TypeNuGet:
		checkVersion(p, path+".version", pkg.Version, true)
	case TypeOCI:
		checkVersion(p, path+".version", pkg.Version, false)
	case TypeMCPB:
		checkVersion(p, path+".version", pkg.Version, false)
		if pkg.FileSHA256 == "" {
			p.add(path+".fileSha256", "is missing: an mcpb package needs the SHA-256 of its file")
		}
		if pkg.Identifier != "" && !strings.HasPrefix(pkg.Identifier, "https://") {
			p.add(path+".identifier", "%q must be the https URL of the .mcpb file", truncate(pkg.Identifier, 80))
		}
	default:
		p.add(path+".registryType", "%q is not a registry type: use npm, pypi, nuget, oci or mcpb", pkg.RegistryType)
	}
	if pkg.Identifier == "" {
		p.add(path+".identifier", "is missing: give the package's name (npm, pypi, nuget), image reference (oci) or download URL (mcpb)")
	}
	if pkg.FileSHA256 != "" && !sha256RE.MatchString(pkg.FileSHA256) {
		p.add(path+".fileSha256", "must be 64 lower-case hexadecimal digits")
	}
	if pkg.RegistryBaseURL != "" {
		checkURL(p, path+".registryBaseUrl", pkg.RegistryBaseURL)
	}
	switch pkg.Transport.Type {
	case "":
		p.add(path+".transport.type", "is missing: give stdio, streamable-http or sse")
	case TransportStdio:
	case TransportStreamableHTTP, TransportSSE:
		checkTransportURL(p, path+".transport", &pkg.Transport)
	default:
		p.add(path+".transport.type", "%q is not a transport: use stdio, streamable-http or sse", pkg.Transport.Type)
	}
	checkHeaders(p, path+".transport.headers", pkg.Transport.Headers)
	checkArguments(p, path+".runtimeArguments", pkg.RuntimeArguments)
	checkArguments(p, path+".packageArguments", pkg.PackageArguments)
	if len(pkg.EnvironmentVariables) > MaxKeyValues {
		p.add(path+".environmentVariables", "%d variables, more than the %d caphub reads", len(pkg.EnvironmentVariables), MaxKeyValues)
		return
	}
	for i, kv := range pkg.EnvironmentVariables {
		kp := fmt.Sprintf("%s.environmentVariables[%d]", path, i)
		if kv.Name == "" {
			p.add(kp+".name", "is missing: give the variable's name")
		}
		checkInput(p, kp, &kv.InputWithVariables)
	}
}

func checkRemote(p *problems, path string, r *Transport) {
	switch r.Type {
	case "":
		p.add(path+".type", "is missing: give streamable-http or sse")
	case TransportStreamableHTTP, TransportSSE:
		checkTransportURL(p, path, r)
	default:
		p.add(path+".type", "%q is not a remote transport: use streamable-http or sse", r.Type)
	}
	checkHeaders(p, path+".headers", r.Headers)
}

// checkTransportURL checks the URL of an HTTP transport: http(s), or a
// template that starts with a {variable}.
func checkTransportURL(p *problems, path string, t *Transport) {
	switch {
	case t.URL == "":
		p.add(path+".url", "is missing: give the server's http(s) URL")
	case strings.HasPrefix(t.URL, "{"):
	case !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://"):
		p.add(path+".url", "%q must start with http:// or https:// (or a {variable})", truncate(t.URL, 80))
	}
	checkVariables(p, path+".variables", t.Variables)
}

func checkHeaders(p *problems, path string, hs []KeyValueInput) {
	if len(hs) > MaxKeyValues {
		p.add(path, "%d headers, more than the %d caphub reads", len(hs), MaxKeyValues)
		return
	}
	for i, h := range hs {
		hp := fmt.Sprintf("%s[%d]", path, i)
		if h.Name == "" {
			p.add(hp+".name", "is missing: give the header's name")
		}
		checkInput(p, hp, &h.InputWithVariables)
	}
}

func checkArguments(p *problems, path string, args []Argument) {
	if len(args) > MaxArguments {
		p.add(path, "%d arguments, more than the %d caphub reads", len(args), MaxArguments)
		return
	}
	for i, a := range args {
		ap := fmt.Sprintf("%s[%d]", path, i)
		switch a.Type {
		case ArgPositional:
			if a.Value == "" && a.ValueHint == "" {
				p.add(ap, "a positional argument needs a value or a valueHint naming what the user gives")
			}
		case ArgNamed:
			if a.Name == "" {
				p.add(ap+".name", "is missing: give the flag, with its dashes (--port)")
			}
		case "":
			p.add(ap+".type", "is missing: give positional or named")
		default:
			p.add(ap+".type", "%q is not an argument type: use positional or named", a.Type)
		}
		checkInput(p, ap, &a.InputWithVariables)
	}
}

func checkInput(p *problems, path string, in *InputWithVariables) {
	checkOneInput(p, path, &in.Input)
	checkVariables(p, path+".variables", in.Variables)
}

func checkVariables(p *problems, path string, vars map[string]Input) {
	if len(vars) > MaxVariables {
		p.add(path, "%d variables, more than the %d caphub reads", len(vars), MaxVariables)
		return
	}
	for _, k := range sortedKeys(vars) {
		v := vars[k]
		checkOneInput(p, path+"."+k, &v)
	}
}

var inputFormats = []string{"", "string", "number", "boolean", "filepath"}

func checkOneInput(p *problems, path string, in *Input) {
	if !slices.Contains(inputFormats, in.Format) {
		p.add(path+".format", "%q is not an input format: use string, number, boolean or filepath", in.Format)
	}
	if len(in.Choices) > MaxChoices {
		p.add(path+".choices", "%d choices, more than the %d caphub reads", len(in.Choices), MaxChoices)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// truncate is s cut to n characters for a message.
func truncate(s string, n int) string { return cutRunes(s, n) }
