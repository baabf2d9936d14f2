// Drives an MCP server over streamable HTTP with the official TypeScript
// SDK's client (npm @modelcontextprotocol/sdk), for the Go tests:
//
//   node tsclient.mjs NODE_MODULES URL [CALL_JSON...]
//
// URL may instead be stdio:["command", "arg", ...]: the client then starts
// that command and speaks to it over stdio, passing it this environment.
//
// It connects, lists every tool (following nextCursor), makes each call
// ({"name": ..., "arguments": {...}}) and prints one JSON object: the
// server's instructions, the tools' names, each page's size and each
// call's result. The SDK checks structured results against the tools'
// output schemas. A call with "progress": true asks for progress (the SDK
// sends a progress token and passes only the notifications that carry it
// to the call), which its result lists under "progress"; one with
// "cancelOnProgress": true also cancels the call at its first progress
// notification (the SDK sends notifications/cancelled), and its result is
// {"cancelled": true, "error": ...}.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [, , modules, url, ...calls] = process.argv;
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "caphub-tsclient-test", version: "1.0.0" });
if (url.startsWith("stdio:")) {
  const [command, ...args] = JSON.parse(url.slice("stdio:".length));
  const { StdioClientTransport } = await load("client/stdio.js");
  await client.connect(new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" }));
} else {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
}
const out = { instructions: client.getInstructions() ?? "", tools: [], pages: [], calls: [] };
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  out.pages.push(Buffer.byteLength(JSON.stringify(page)));
  out.tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor && out.pages.length < 1000);
for (const c of calls) {
  const { name, arguments: args, progress, cancelOnProgress } = JSON.parse(c);
  if (!progress && !cancelOnProgress) {
    out.calls.push(await client.callTool({ name, arguments: args }));
    continue;
  }
  const seen = [];
  const abort = new AbortController();
  const onprogress = (p) => {
    seen.push(p);
    if (cancelOnProgress) abort.abort("cancelled at the first progress notification");
  };
  try {
    const res = await client.callTool({ name, arguments: args }, undefined, { onprogress, signal: abort.signal });
    out.calls.push({ ...res, progress: seen });
  } catch (e) {
    if (!abort.signal.aborted) throw e;
    out.calls.push({ cancelled: true, error: String(e), progress: seen });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
