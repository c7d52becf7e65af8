// Runs the server scenarios of @modelcontextprotocol/conformance through the
// toolcanon gateway, in front of the suite's own reference server
// (everything-server.ts, examples/servers/typescript of the suite's
// repository at v0.1.16, commit 21a9a2febd71, unchanged, under its LICENSE),
// stateless and with --sessions, and prints each scenario's outcome with the
// reason of each failed check. Exits 1 when the outcomes differ from
// baseline.yml (a new failure, or a listed one that passes).
//
// The configuration is the one `toolcanon gateway pin` prints, with the
// review this suite needs: every tool is a read (the gateway runs only
// reads) that may pass 1 MiB of images and audio, the one narrowed draft is
// accepted, the run defaults to "conformance", every tool, prompt and resource is granted, and prompts
// and resources pass their images and blobs. The suite's client passes no
// tool_call_id, which the gateway never invents: a relay in front of the
// gateway gives each tools/call a fresh one in _meta, as a host would.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, rmSync, existsSync } from "node:fs";
import http from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
// The suite needs Node 22 (fs.globSync); the npm package "node" ships it.
const node22 = join(here, "node_modules", ".bin", "node");
const suite = join(dirname(require.resolve("@modelcontextprotocol/conformance/package.json")), "dist", "index.js");
const tsx = join(dirname(require.resolve("tsx/package.json")), "dist", "cli.mjs");
const work = mkdtempSync(join(tmpdir(), "toolcanon-conformance-"));
const children = [];
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

function bin() {
  if (process.env.TOOLCANON_BIN) return process.env.TOOLCANON_BIN;
  const out = join(work, "toolcanon");
  execFileSync("go", ["build", "-o", out, "./cmd/toolcanon"], { cwd: join(here, "..", "..", ".."), stdio: "inherit" });
  return out;
}

function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitPort(port, child, what) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const c = connect(port, "127.0.0.1");
      c.once("connect", () => { c.end(); resolve(true); });
      c.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${what} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function start(cmd, args, opts = {}) {
  const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"], ...opts });
  child.stderrText = "";
  child.stderr.on("data", (d) => (child.stderrText += d));
  children.push(child);
  return child;
}

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

// relay gives every tools/call a tool_call_id and the run in _meta.
function relay(target) {
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let body = Buffer.concat(chunks);
      try {
        const msg = JSON.parse(body);
        if (msg.method === "tools/call") {
          msg.params._meta = { ...(msg.params._meta ?? {}), "io.github.toolcanon/toolCallId": `conformance_${++n}`, "io.github.toolcanon/runId": "conformance" };
          body = Buffer.from(JSON.stringify(msg));
        }
      } catch { /* not JSON: passed on as it is */ }
      const up = http.request(target, { method: req.method, headers: { ...req.headers, "content-length": String(body.length) } }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        ur.pipe(res);
      });
      up.on("error", () => { res.writeHead(502); res.end(); });
      up.end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// outcomes reads the suite's results: scenario -> failed checks.
function outcomes(dir) {
  const out = new Map();
  for (const d of readdirSync(dir)) {
    const m = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(d);
    if (!m || !existsSync(join(dir, d, "checks.json"))) continue;
    const checks = JSON.parse(readFileSync(join(dir, d, "checks.json"), "utf8"));
    const why = (c) => (c.errorMessage || c.details?.message || "").replace(/\s+/g, " ").slice(0, 300);
    out.set(m[1], checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING")
      .map((c) => `${c.status === "WARNING" ? "warning: " : ""}${c.id}: ${why(c)}`));
  }
  return out;
}

const toolcanon = bin();
const upPort = await freePort();
const upstream = start(node22, [tsx, join(here, "everything-server.ts")], { env: { ...process.env, PORT: String(upPort) } });
await waitPort(upPort, upstream, "the reference server");

const upstreams = join(work, "upstreams.json");
writeFileSync(upstreams, JSON.stringify({ upstreams: { conformance: { url: `http://127.0.0.1:${upPort}/mcp` } } }));
const pin = await run(toolcanon, ["gateway", "pin", "--config", upstreams]);
if (pin.code !== 0) throw new Error(`gateway pin: ${pin.stderr}`);
const doc = JSON.parse(pin.stdout);
for (const t of doc.tools) {
  if (t.unbounded) console.log(`narrowed draft accepted: ${t.upstream_tool}: ${t.unbounded}`);
  delete t.unbounded;
  t.definition.effect = "read";
  t.definition.risk = "low";
  t.projector = { kind: "mcp", media: { max_bytes: 1 << 20 } };
}
// Prompts and resources pass their images and blobs within the same budget.
for (const e of [...(doc.prompts ?? []), ...(doc.resources ?? [])]) e.media = { max_bytes: 1 << 20 };
// The run's results hold the projection's budget and the media.
doc.run = { ...(doc.run ?? {}), max_result_bytes: (16 << 10) + (1 << 20), max_record_bytes: 8 << 20 };
doc.identity.default_run = "conformance";
doc.policy = { grants: [{ principals: ["*"], projects: [doc.identity.project], allow: ["tool.call:*", "prompt.get:*", "resource.read:*"] }] };
const config = join(work, "gateway.json");
writeFileSync(config, JSON.stringify(doc, null, 2));
const check = await run(toolcanon, ["gateway", "check", "--config", config]);
if (check.code !== 0) throw new Error(`gateway check: ${check.stderr}`);
process.stdout.write(check.stdout);

// baseline.yml: for each mode, the scenarios expected to fail; "either":
// those whose outcome varies from run to run (in any mode).
const baseline = { stateless: new Set(), sessions: new Set(), either: new Set() };
let section;
for (const line of readFileSync(join(here, "baseline.yml"), "utf8").split("\n")) {
  const head = /^(\w+):\s*$/.exec(line);
  const item = /^\s+-\s+(\S+)/.exec(line);
  if (head) section = baseline[head[1]];
  else if (item && section) section.add(item[1]);
}
let failed = false;
for (const [name, flags] of [["stateless", []], ["sessions", ["--sessions"]]]) {
  const gw = start(toolcanon, ["gateway", "--config", config, "--listen", "127.0.0.1:0", ...flags]);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not listen: ${gw.stderrText}`)), 30000);
    gw.stderr.on("data", () => {
      const m = /listening on (http:\/\/\S+\/mcp)/.exec(gw.stderrText);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
  const r = await relay(url);
  const results = join(work, `results-${name}`);
  const res = await run(node22, [suite, "server", "--url", `http://127.0.0.1:${r.address().port}/mcp`, "-o", results]);
  r.close();
  gw.kill("SIGTERM");
  console.log(`\n== gateway ${name === "sessions" ? "with --sessions" : "stateless"}: the suite exited ${res.code} (1 on any failure)`);
  const unexpected = [], stale = [];
  let passes = 0;
  for (const [scenario, fails] of [...outcomes(results)].sort()) {
    // The suite counts a warning as a failure; so does the baseline.
    const verdict = fails.some((f) => !f.startsWith("warning: ")) ? "FAIL" : fails.length ? "warn" : "pass";
    console.log(`${verdict} ${scenario}`);
    for (const f of fails) console.log(`     ${f}`);
    if (!fails.length) passes++;
    if (baseline.either.has(scenario)) continue;
    if (fails.length && !baseline[name].has(scenario)) unexpected.push(scenario);
    if (!fails.length && baseline[name].has(scenario)) stale.push(scenario);
  }
  console.log(`${passes} scenarios pass; unexpected failures: ${unexpected.join(", ") || "none"}; ` +
    `listed in baseline.yml but passing: ${stale.join(", ") || "none"}`);
  failed ||= unexpected.length > 0 || stale.length > 0;
}
process.exit(failed ? 1 : 0);
