// What the tests start: a redis-server on a free port, the toolcanon
// binary (TOOLCANON_BIN, else built here with go), configurations drafted
// by `toolcanon gateway pin` in front of server-everything, and gateways
// reached with the official TypeScript SDK's client over stdio and
// streamable HTTP. Every process is stopped when the test ends.
import { spawn, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import http from "node:http";
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const require = createRequire(import.meta.url);
export const everything = join(dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist", "index.js");

export const MetaToolCallID = "io.github.toolcanon/toolCallId";
export const MetaRunID = "io.github.toolcanon/runId";

// storeRun is the store's id of the run an agent of principal names name,
// as gateway.PrincipalRun makes it: each principal names runs in its own
// namespace. The drafted configuration's principal is "local-agent".
export function storeRun(name, principal = "local-agent") {
  const tag = createHash("sha256").update("toolcanon/principal\0" + principal).digest("hex");
  return `${name}.${tag.slice(0, 16)}`;
}

// A deadline for every wait, so that a hung process fails the test.
const waitMs = 20000;

export function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "toolcanon-mcp-ts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let built;
// binary returns the toolcanon command: TOOLCANON_BIN, or one built once.
export function binary() {
  if (process.env.TOOLCANON_BIN) return process.env.TOOLCANON_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "toolcanon-bin-"));
    built = join(dir, "toolcanon");
    execFileSync("go", ["build", "-o", built, "./cmd/toolcanon"], { cwd: repo, stdio: "inherit" });
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// own stops child when the test ends.
function own(t, child) {
  t.after(() => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5000).unref();
  }));
  return child;
}

// redis starts a redis-server on a free loopback port, without persistence.
export async function redis(t) {
  const port = await freePort();
  const child = own(t, spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" }));
  const deadline = Date.now() + waitMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const c = connect(port, "127.0.0.1");
      c.once("connect", () => { c.end(); resolve(true); });
      c.once("error", () => resolve(false));
    });
    if (ok) return `127.0.0.1:${port}`;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("redis-server did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
}

// run runs the toolcanon command to its end.
export function run(args) {
  return new Promise((resolve) => {
    const child = spawn(binary(), args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60000);
    child.on("close", (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

// draft writes a configuration with only server-everything as upstream,
// runs `gateway pin` on it and writes what it printed as gateway.json,
// unchanged. It returns the paths and pin's output.
export async function draft(dir) {
  const upstreams = join(dir, "upstreams.json");
  writeFileSync(upstreams, JSON.stringify({ upstreams: { everything: { command: ["node", everything, "stdio"] } } }));
  const pin = await run(["gateway", "pin", "--config", upstreams]);
  if (pin.code !== 0) throw new Error(`gateway pin exited ${pin.code}: ${pin.stderr}`);
  const config = join(dir, "gateway.json");
  writeFileSync(config, pin.stdout);
  return { upstreams, config, pin };
}

// edit rewrites the configuration at path with fn.
export function edit(path, fn) {
  const doc = JSON.parse(readFileSync(path, "utf8"));
  fn(doc);
  writeFileSync(path, JSON.stringify(doc, null, 2));
}

function client() {
  return new Client({ name: "toolcanon-mcp-ts", version: "1" });
}

// stdioGateway starts `toolcanon gateway --stdio` through the SDK's stdio
// transport and returns the connected client.
export async function stdioGateway(t, config, ...extra) {
  const transport = new StdioClientTransport({
    command: binary(), args: ["gateway", "--config", config, "--stdio", ...extra], stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  const c = client();
  t.after(() => c.close());
  try {
    await c.connect(transport, { timeout: waitMs });
  } catch (e) {
    throw new Error(`${e.message}; gateway stderr: ${stderr}`);
  }
  c.stderrText = () => stderr;
  return c;
}

// httpGateway starts `toolcanon gateway --listen 127.0.0.1:0` and returns
// its endpoint, read from the line it logs when listening.
export async function httpGateway(t, config, ...extra) {
  const child = own(t, spawn(binary(), ["gateway", "--config", config, "--listen", "127.0.0.1:0", ...extra],
    { stdio: ["ignore", "ignore", "pipe"] }));
  let stderr = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not listen: ${stderr}`)), waitMs);
    child.stderr.on("data", (d) => {
      stderr += d;
      const m = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on("exit", (code) => reject(new Error(`the gateway exited ${code}: ${stderr}`)));
  });
  return { url, stderr: () => stderr };
}

// httpClient connects the SDK's streamable HTTP client to url.
export async function httpClient(t, url) {
  const c = client();
  t.after(() => c.close());
  await c.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: waitMs });
  return c;
}

// call calls tool with a tool_call_id and a run in _meta and returns the
// result with the agent JSON decoded (json), or that of its text.
export async function call(c, name, args, id, runId, options) {
  const res = await c.callTool({ name, arguments: args, _meta: { [MetaToolCallID]: id, [MetaRunID]: runId } }, undefined, options);
  const text = res.content?.find((x) => x.type === "text")?.text ?? "";
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { ...res, text, json };
}

let seq = 0;
// id returns a tool_call_id no other call of this process uses.
export function id(prefix = "call") {
  return `${prefix}_${process.pid}_${Date.now()}_${++seq}`;
}

// balancer starts a relay in front of replicas, as a load balancer of
// stateless replicas: each request goes to urls[route(message)], message
// being the JSON-RPC message a POST carries (undefined for other requests).
// It returns the relay's URL.
export async function balancer(t, urls, route) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      let msg;
      try { msg = JSON.parse(body); } catch { msg = undefined; }
      const target = new URL(urls[route(msg)]);
      const up = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        ur.pipe(res);
      });
      up.on("error", () => { if (!res.headersSent) res.writeHead(502); res.end(); });
      up.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }));
  return `http://127.0.0.1:${server.address().port}/mcp`;
}
