// Drives npm server-everything through the front with the official
// TypeScript SDK's client (npm @modelcontextprotocol/sdk), for the Go tests
// of shared upstream sessions:
//
//   node tsshared.mjs NODE_MODULES URL
//
// It connects, runs two trigger-long-running-operation calls at once, each
// with its own progress handler (the SDK makes each call's id its progress
// token), and a third that it aborts after its first progress, then prints
// one JSON object: each call's progress values, the calls' result texts,
// how the aborted call ended, and every error the client reported (the SDK
// reports progress for a token it did not hand out as one).
import path from "node:path";
import { pathToFileURL } from "node:url";

const [, , modules, url] = process.argv;
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "caphub-tsshared-test", version: "1.0.0" });
const errors = [];
client.onerror = (e) => errors.push(String(e?.message ?? e));
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const long = (args, progress, signal) =>
  client.callTool({ name: "trigger-long-running-operation", arguments: args }, undefined, {
    onprogress: (p) => progress.push(p.progress),
    signal,
    timeout: 30000,
  });
const progress = [[], [], []];
const abort = new AbortController();
// The id, and so the progress token, of the call to abort (the SDK's next
// id): the server goes on with it after the abort, and its progress may
// still pass before the front learns of the abort, so the SDK's errors
// about that token are counted apart.
const abortedToken = client._requestMessageId;
const aborted = long({ duration: 3, steps: 3 }, { push: (v) => { progress[2].push(v); abort.abort(); } }, abort.signal)
  .then(() => "completed", (e) => "rejected: " + (e?.name ?? "") + " " + (e?.message ?? e));
const results = await Promise.all([long({ duration: 1, steps: 3 }, progress[0]), long({ duration: 1.5, steps: 3 }, progress[1])]);
const out = {
  progress,
  results: results.map((r) => r.content.map((c) => c.text).join("\n")),
  aborted: await aborted,
  errors: errors.filter((e) => !e.includes(`"progressToken":${abortedToken}}`)),
  lateProgress: errors.length - errors.filter((e) => !e.includes(`"progressToken":${abortedToken}}`)).length,
};
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
