package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/caphub/caphub/internal/jsoncheck"
	"github.com/spf13/cobra"
)

// mcpClient is what caphub knows of one MCP client's configuration file:
// where it lives, the key its servers sit under, whether it reaches HTTP
// servers itself and how it spells a reference to an environment variable
// (empty: it expands none, so the token comes from a file).
type mcpClient struct {
	name string
	// serversKey is the top-level key of the servers (mcpServers or servers).
	serversKey string
	// http: the client connects to streamable HTTP servers by URL.
	http bool
	// typeField: entries carry "type" (stdio or http).
	typeField bool
	// envRef spells a reference to the variable NAME ("" if unsupported).
	envRef func(name string) string
	// path is the configuration file --write changes.
	path func() (string, error)
	// where says, for the help, which file that is.
	where string
}

// mcpClients are the clients caphub client config writes for.
var mcpClients = []mcpClient{
	{
		name: "claude-desktop", serversKey: "mcpServers",
		path: func() (string, error) {
			dir, err := os.UserConfigDir()
			return filepath.Join(dir, "Claude", "claude_desktop_config.json"), err
		},
		where: "claude_desktop_config.json in the user's config directory (Claude/)",
	},
	{
		name: "claude-code", serversKey: "mcpServers", http: true, typeField: true,
		envRef: func(n string) string { return "${" + n + "}" },
		path:   func() (string, error) { return filepath.Abs(".mcp.json") },
		where:  ".mcp.json of the project (the working directory)",
	},
	{
		name: "cursor", serversKey: "mcpServers", http: true,
		envRef: func(n string) string { return "${env:" + n + "}" },
		path: func() (string, error) {
			home, err := os.UserHomeDir()
			return filepath.Join(home, ".cursor", "mcp.json"), err
		},
		where: "~/.cursor/mcp.json",
	},
	{
		name: "vscode", serversKey: "servers", http: true, typeField: true,
		envRef: func(n string) string { return "${env:" + n + "}" },
		path:   func() (string, error) { return filepath.Abs(filepath.Join(".vscode", "mcp.json")) },
		where:  ".vscode/mcp.json of the workspace (the working directory)",
	},
}

func clientNames() []string {
	var names []string
	for _, c := range mcpClients {
		names = append(names, c.name)
	}
	return names
}

func newClientCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "client",
		Short:   "Configure MCP clients to use caphub",
		Example: "  caphub client config claude-desktop\n  caphub client config cursor --server http://127.0.0.1:8750 --write",
	}
	cmd.AddCommand(newClientConfigCmd())
	return cmd
}

func newClientConfigCmd() *cobra.Command {
	var files []string
	for _, c := range mcpClients {
		files = append(files, fmt.Sprintf("  %-15s %s", c.name, c.where))
	}
	cmd := &cobra.Command{
		Use:   "config CLIENT",
		Short: "Print (or --write) the MCP client configuration that starts or reaches caphub",
		Long: `client config prints the configuration an MCP client needs to use caphub: ` + strings.Join(clientNames(), ", ") + `.

Without --server the client starts caphub mcp on the local database (--db, made absolute).
With --server URL it reaches that caphub server, for the whole catalog or, with --agent ID,
that agent's tools: over streamable HTTP where the client supports it (--transport http,
the default there), else by starting caphub mcp --server URL (--transport stdio). The token
is never written: the configuration refers to $CAPHUB_TOKEN in the client's own syntax;
Claude Desktop expands no variables, so there caphub reads it from --token-file (default:
caphub/token in the user's config directory, which must be readable by its owner alone).

--write merges the entry (named --name) into the client's file, keeping every other entry
and saving the old file beside it first (FILE.<time>.bak); --file names another file:
` + strings.Join(files, "\n"),
		Example: "  caphub client config claude-desktop --db ~/caphub.db\n" +
			"  caphub client config claude-code --server https://caphub.internal:8750 --agent triage --write\n" +
			"  caphub client config vscode --server http://127.0.0.1:8750",
		Args: exactArgs(1, "a client: "+strings.Join(clientNames(), ", ")),
		RunE: func(cmd *cobra.Command, args []string) error {
			i := slices.IndexFunc(mcpClients, func(c mcpClient) bool { return c.name == args[0] })
			if i < 0 {
				return &usageError{fmt.Errorf("unknown client %q: caphub writes configurations for %s", args[0], strings.Join(clientNames(), ", "))}
			}
			cfg, err := clientConfigFrom(cmd)
			if err != nil {
				return err
			}
			entry, note, err := clientEntry(mcpClients[i], cfg)
			if err != nil {
				return err
			}
			name := flagString(cmd, "name")
			if !cmd.Flags().Changed("write") {
				doc := map[string]any{mcpClients[i].serversKey: map[string]any{name: entry}}
				b, _ := json.MarshalIndent(doc, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			} else {
				path := flagString(cmd, "file")
				if path == "" {
					if path, err = mcpClients[i].path(); err != nil {
						return fmt.Errorf("%s's configuration file: %w (name it with --file)", mcpClients[i].name, err)
					}
				}
				backup, err := mergeClientFile(path, mcpClients[i].serversKey, name, entry)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "caphub: wrote %q to %s", name, path)
				if backup != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), " (the old file is %s)", backup)
				}
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			if note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "caphub: "+note)
			}
			return nil
		},
	}
	cmd.Flags().String("agent", "", "with --server, the agent whose tools the client sees (/mcp/agents/ID)")
	cmd.Flags().String("transport", "", "stdio (the client starts caphub mcp) or http (the client connects to --server); default http where the client supports it and --server is given")
	cmd.Flags().String("name", "caphub", "the entry's name in the client's configuration")
	cmd.Flags().String("command", "", "the caphub executable the client starts (default: this one)")
	cmd.Flags().Bool("write", false, "merge the entry into the client's configuration file, backing it up first")
	cmd.Flags().String("file", "", "with --write, the file to change instead of the client's usual one")
	return cmd
}

// clientSettings is what one client configuration is made from.
type clientSettings struct {
	db, server, agent, transport, command, tokenFile string
}

func clientConfigFrom(cmd *cobra.Command) (clientSettings, error) {
	s := clientSettings{
		server:    stringSetting(cmd, "server", "CAPHUB_SERVER"),
		agent:     flagString(cmd, "agent"),
		transport: flagString(cmd, "transport"),
		command:   flagString(cmd, "command"),
		tokenFile: stringSetting(cmd, "token-file", "CAPHUB_TOKEN_FILE"),
	}
	var err error
	if s.command == "" {
		if s.command, err = os.Executable(); err != nil {
			return s, fmt.Errorf("finding this caphub executable: %w (name it with --command)", err)
		}
	}
	if s.command, err = filepath.Abs(s.command); err != nil {
		return s, err
	}
	switch s.transport {
	case "", "stdio", "http":
	default:
		return s, &usageError{fmt.Errorf("--transport %q: give stdio or http", s.transport)}
	}
	if s.server == "" {
		if s.agent != "" {
			return s, &usageError{errors.New("--agent names an agent of a caphub server: give --server URL too (a local caphub mcp serves the whole catalog)")}
		}
		if s.transport == "http" {
			return s, &usageError{errors.New("--transport http connects the client to a caphub server: give --server URL")}
		}
		cfg, err := configFrom(cmd, slog.LevelWarn)
		if err != nil {
			return s, err
		}
		s.db = cfg.db
		if !strings.Contains(s.db, "://") {
			if s.db, err = filepath.Abs(s.db); err != nil {
				return s, err
			}
		}
		return s, nil
	}
	u, err := url.Parse(s.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, &usageError{fmt.Errorf("--server %q must be an absolute http(s) URL of a caphub server, e.g. http://127.0.0.1:8750", s.server)}
	}
	s.server = strings.TrimRight(s.server, "/")
	return s, nil
}

// clientEntry is the configuration entry of c for s, and a note for the
// user (what to set up for it to work).
func clientEntry(c mcpClient, s clientSettings) (entry map[string]any, note string, err error) {
	entry = map[string]any{}
	if s.server == "" {
		if c.typeField {
			entry["type"] = "stdio"
		}
		entry["command"], entry["args"] = s.command, []string{"mcp", "--db", s.db}
		return entry, "", nil
	}
	transport := s.transport
	if transport == "" {
		transport = "stdio"
		if c.http {
			transport = "http"
		}
	}
	if transport == "http" && !c.http {
		return nil, "", &usageError{fmt.Errorf("%s starts its MCP servers as commands: leave out --transport http (it then starts caphub mcp --server)", c.name)}
	}
	if transport == "http" {
		endpoint := s.server + "/mcp"
		if s.agent != "" {
			endpoint += "/agents/" + url.PathEscape(s.agent)
		}
		if c.typeField {
			entry["type"] = "http"
		}
		entry["url"] = endpoint
		entry["headers"] = map[string]string{"Authorization": "Bearer " + c.envRef("CAPHUB_TOKEN")}
		return entry, "set CAPHUB_TOKEN in the environment " + c.name + " starts from (a token of the server: caphub token create NAME --scope read --scope invoke)", nil
	}
	if c.typeField {
		entry["type"] = "stdio"
	}
	args := []string{"mcp", "--server", s.server}
	if s.agent != "" {
		args = append(args, "--agent", s.agent)
	}
	if c.envRef != nil && s.tokenFile == "" {
		entry["env"] = map[string]string{"CAPHUB_TOKEN": c.envRef("CAPHUB_TOKEN")}
		note = "set CAPHUB_TOKEN in the environment " + c.name + " starts from (a token of the server: caphub token create NAME --scope read --scope invoke)"
	} else {
		file := s.tokenFile
		if file == "" {
			dir, err := os.UserConfigDir()
			if err != nil {
				return nil, "", fmt.Errorf("%s expands no variables, so the token comes from a file: %w (name one with --token-file)", c.name, err)
			}
			file = filepath.Join(dir, "caphub", "token")
		}
		if file, err = filepath.Abs(file); err != nil {
			return nil, "", err
		}
		args = append(args, "--token-file", file)
		if st, err := os.Stat(file); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o077 == 0 {
			return withCommand(entry, s.command, args), "", nil // the token is in place
		}
		note = fmt.Sprintf("put a token of the server in %s, readable by you alone: (umask 077; caphub token create NAME --scope read --scope invoke > %s)", file, file)
		if runtime.GOOS == "windows" {
			note = fmt.Sprintf("put a token of the server in %s: caphub token create NAME --scope read --scope invoke", file)
		}
	}
	return withCommand(entry, s.command, args), note, nil
}

// withCommand sets the program an entry starts and its arguments.
func withCommand(entry map[string]any, command string, args []string) map[string]any {
	entry["command"], entry["args"] = command, args
	return entry
}

// maxClientFile bounds a client configuration file --write reads.
const maxClientFile = 8 << 20

// mergeClientFile sets serversKey.name to entry in the JSON file at path,
// keeping everything else, after copying the old file to a backup (whose
// path it returns; "" when there was no file). A file that is not a JSON
// object is left as it is, with an error saying where it is broken.
func mergeClientFile(path, serversKey, name string, entry map[string]any) (backup string, err error) {
	doc := map[string]any{}
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", path, err)
	case len(old) > maxClientFile:
		return "", fmt.Errorf("%s holds %d bytes, more than a client configuration (%d at most): name another file with --file", path, len(old), maxClientFile)
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
		if len(bytes.TrimSpace(old)) > 0 {
			if err := json.Unmarshal(old, &doc); err != nil {
				return "", fmt.Errorf("%s is not a JSON object (%s), so caphub leaves it alone: fix it, or add the entry that caphub client config prints by hand", path, jsonErrorWhere(old, err))
			}
		}
	}
	servers, ok := doc[serversKey].(map[string]any)
	if doc[serversKey] != nil && !ok {
		return "", fmt.Errorf("%s: %q is not an object, so caphub leaves the file alone: fix it, or add the entry by hand", path, serversKey)
	}
	if servers == nil {
		servers = map[string]any{}
	}
	servers[name] = entry
	doc[serversKey] = servers
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if old != nil {
		backup = path + "." + time.Now().UTC().Format("20060102T150405Z") + ".bak"
		if err := os.WriteFile(backup, old, mode); err != nil {
			return "", fmt.Errorf("backing up %s: %w (nothing was changed)", path, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(append(out, '\n')); err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w (the old file is unchanged)", path, err)
	}
	return backup, nil
}

// jsonErrorWhere names the line and column of a JSON decoding error.
func jsonErrorWhere(doc []byte, err error) string {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return err.Error()
	}
	line, col := jsoncheck.Position(doc, int(syn.Offset))
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
