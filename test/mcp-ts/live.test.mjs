// Progress and cancellation through the gateway, as the official
// TypeScript SDK's client uses them: onprogress (which sends a
// progressToken) and an AbortSignal (which sends notifications/cancelled),
// over stdio, stateless streamable HTTP and --sessions, with
// server-everything's trigger-long-running-operation as the upstream tool.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  tempDir, redis, run, draft, edit, stdioGateway, httpGateway, httpClient, balancer, call, id, storeRun,
} from "./harness.mjs";

// connect returns a client of a gateway started over transport, on Redis.
async function connect(t, transport) {
  const addr = await redis(t);
  const { config } = await draft(tempDir(t));
  if (transport === "stdio") {
    const c = await stdioGateway(t, config, "--redis", addr);
    return { c, addr, log: c.stderrText };
  }
  const g = await httpGateway(t, config, "--redis", addr, ...(transport === "sessions" ? ["--sessions"] : []));
  return { c: await httpClient(t, g.url), addr, log: g.stderr };
}

// record reads one call's record as `toolcanon inspect --json` prints it;
// runId is the run the agent named.
async function record(addr, runId, callId) {
  const out = await run(["inspect", "--redis", addr, "--standalone", "--run", storeRun(runId), "--call", callId, "--json"]);
  assert.equal(out.code, 0, out.stderr);
  const doc = JSON.parse(out.stdout);
  return doc.records ? doc.records[0] : doc;
}

for (const transport of ["stdio", "http", "sessions"]) {
  test(`progress reaches the agent, a cancel reaches the upstream (${transport})`, async (t) => {
    const { c, addr, log } = await connect(t, transport);
    const seen = [];
    const res = await call(c, "trigger-long-running-operation", { duration: 1, steps: 4 }, id(), id("run"),
      { onprogress: (p) => seen.push(p), timeout: 20000 });
    assert.ok(!res.isError, res.text);
    assert.match(res.text, /Long running operation completed/);
    assert.deepEqual(seen.map((p) => [p.progress, p.total]), [[1, 4], [2, 4], [3, 4], [4, 4]]);

    // A cancel reaches the upstream and the call ends CANCELLED.
    const runId = id("run");
    const callId = id();
    const abort = new AbortController();
    const started = Date.now();
    const pending = call(c, "trigger-long-running-operation", { duration: 10, steps: 10 }, callId, runId,
      { signal: abort.signal, onprogress: () => abort.abort("the agent gave up"), timeout: 30000 });
    await assert.rejects(pending);
    let rec;
    for (;;) {
      rec = await record(addr, runId, callId);
      if (rec.status !== "PROJECTING") break;
      assert.ok(Date.now() - started < 16000, `still ${JSON.stringify(rec)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(rec.status, "ERROR", JSON.stringify(rec));
    assert.equal(rec.error, "CANCELLED", JSON.stringify(rec));
    // Closed about a second in (the first progress), not after the ten the tool takes.
    const lasted = Date.parse(rec.updated) - Date.parse(rec.created);
    assert.ok(lasted < 5000, `the call lasted ${lasted} ms`);
    // The upstream had been sent the call, as the gateway's log says.
    assert.match(log(), new RegExp(`tool_call_id=${callId} .*code=CANCELLED executed=true`));
    // The id stays spent.
    const again = await call(c, "trigger-long-running-operation", { duration: 1, steps: 1 }, callId, runId);
    assert.equal(again.json.error_code, "DUPLICATE_TOOL_CALL");
  });
}

test("an image result reaches the agent within the media budget; without one it is named as withheld", async (t) => {
  const dir = tempDir(t);
  const addr = await redis(t);
  const { config } = await draft(dir);
  const c = await stdioGateway(t, config, "--redis", addr);
  const runId = id("run");
  const withheld = await call(c, "get-tiny-image", {}, id(), runId);
  assert.ok(!withheld.content.some((b) => b.type === "image"), JSON.stringify(withheld.content).slice(0, 300));
  assert.ok(withheld.json.withheld?.some((w) => w.type === "image" && w.reason === "over_budget"), withheld.text);

  // The reviewed edit: get-tiny-image may pass 64 KiB of PNG.
  edit(config, (doc) => {
    doc.run = { ...(doc.run ?? {}), max_result_bytes: 131072 };
    doc.tools.find((e) => e.upstream_tool === "get-tiny-image").projector = { kind: "mcp", media: { max_bytes: 65536, mime_types: ["image/png"] } };
  });
  const c2 = await stdioGateway(t, config, "--redis", addr);
  // A new run: a run keeps the limits it began with.
  const res = await call(c2, "get-tiny-image", {}, id(), id("run"));
  assert.ok(!res.isError, res.text);
  const img = res.content.find((b) => b.type === "image");
  assert.ok(img, JSON.stringify(res.content).slice(0, 300));
  assert.equal(img.mimeType, "image/png");
  assert.equal(Buffer.from(img.data, "base64").subarray(1, 4).toString(), "PNG");
});

// Two stateless replicas behind a balancer that sends the cancel to the
// other replica than the call: it reaches the call through Redis.
test("a cancel that reaches another replica still cancels the call", async (t) => {
  const addr = await redis(t);
  const { config } = await draft(tempDir(t));
  const a = await httpGateway(t, config, "--redis", addr);
  const b = await httpGateway(t, config, "--redis", addr);
  const c = await httpClient(t, await balancer(t, [a.url, b.url], (msg) => (msg?.method === "notifications/cancelled" ? 1 : 0)));
  const runId = id("run");
  const callId = id();
  const abort = new AbortController();
  const pending = call(c, "trigger-long-running-operation", { duration: 10, steps: 10 }, callId, runId,
    { signal: abort.signal, onprogress: () => abort.abort("the agent gave up"), timeout: 30000 });
  await assert.rejects(pending);
  const started = Date.now();
  let rec;
  while ((rec = await record(addr, runId, callId)).status === "PROJECTING") {
    assert.ok(Date.now() - started < 16000, `still ${JSON.stringify(rec)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(rec.error, "CANCELLED", JSON.stringify(rec));
  const lasted = Date.parse(rec.updated) - Date.parse(rec.created);
  assert.ok(lasted < 5000, `the call lasted ${lasted} ms`);
  // The replica that ran the call recorded the cancel.
  assert.match(a.stderr(), new RegExp(`tool_call_id=${callId} .*code=CANCELLED executed=true`));
});
