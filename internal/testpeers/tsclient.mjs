// Drives an MCP server over streamable HTTP with the official TypeScript
// SDK's client (npm @modelcontextprotocol/sdk), for the Go tests:
//
//   node tsclient.mjs NODE_MODULES URL [CALL_JSON...]
//
// It connects, lists every tool (following nextCursor), makes each call
// ({"name": ..., "arguments": {...}}) and prints one JSON object: the
// server's instructions, the tools' names, each page's size and each
// call's result. The SDK checks structured results against the tools'
// output schemas.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [, , modules, url, ...calls] = process.argv;
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "caphub-tsclient-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const out = { instructions: client.getInstructions() ?? "", tools: [], pages: [], calls: [] };
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  out.pages.push(Buffer.byteLength(JSON.stringify(page)));
  out.tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor && out.pages.length < 1000);
for (const c of calls) {
  const { name, arguments: args } = JSON.parse(c);
  out.calls.push(await client.callTool({ name, arguments: args }));
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
