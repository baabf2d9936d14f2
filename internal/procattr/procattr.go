// Package procattr says how caphub starts the programs it runs (stdio MCP
// servers, CLI bindings): in a session or process group of their own, so
// that they and what they start can be stopped together, and, on Linux,
// killed by the kernel when caphub dies without stopping them (SIGKILL, the
// OOM killer, a crash), so that none outlives it orphaned.
package procattr
