// The toolcanon gateway as MCP users meet it: the official TypeScript SDK's
// client as the agent, @modelcontextprotocol/server-everything as the
// upstream, the built toolcanon binary between them, on a real Redis.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  tempDir, redis, run, draft, edit, stdioGateway, httpGateway, httpClient, call, id,
} from "./harness.mjs";

// server-everything's tools that say readOnlyHint: the drafts make them
// read tools; the others are drafted as writes.
const reads = ["echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
  "get-roots-list", "get-structured-content", "get-sum", "get-tiny-image", "trigger-long-running-operation"];

test("gateway pin prints a configuration gateway check accepts unchanged", async (t) => {
  const dir = tempDir(t);
  const { config, pin } = await draft(dir);
  const doc = JSON.parse(pin.stdout);
  const names = doc.tools.map((e) => e.upstream_tool).sort();
  assert.ok(names.length >= 13, `drafts: ${names}`);
  for (const e of doc.tools) assert.equal(e.unbounded, undefined, `${e.upstream_tool} is marked: ${e.unbounded}`);
  for (const r of reads) assert.ok(doc.policy.grants[0].allow.includes(`tool.call:${doc.tools.find((e) => e.upstream_tool === r).definition.name}`), r);
  assert.match(pin.stderr, /everything\/echo: new sha256:[0-9a-f]{64}/);
  assert.match(pin.stderr, /adjusted at "\/properties\/message", "maxLength": 4096 added/);
  const check = await run(["gateway", "check", "--config", config]);
  assert.equal(check.code, 0, check.stderr);
  assert.match(check.stdout, new RegExp(`ok: ${names.length} tools, ${doc.prompts.length} prompts, ${doc.resources.length} resources from 1 upstreams`));
  // Prompts and resources are drafted too, each granted by its name.
  assert.ok(doc.prompts.length > 0 && doc.resources.length > 0);
  for (const p of doc.prompts) assert.ok(doc.policy.grants[0].allow.includes(`prompt.get:${p.name}`), p.name);
});

test("over stdio: initialize, list, call, duplicate id, large result", async (t) => {
  const dir = tempDir(t);
  const addr = await redis(t);
  const { config } = await draft(dir);
  // The one reviewed edit: echo takes messages of up to 60,000 characters (inputs are at most 64 KiB).
  edit(config, (doc) => {
    doc.tools.find((e) => e.upstream_tool === "echo").definition.input_schema.properties.message.maxLength = 60000;
  });
  const c = await stdioGateway(t, config, "--redis", addr);
  assert.equal(c.getServerVersion().name, "toolcanon-gateway");
  assert.ok(c.getServerCapabilities().tools);

  // tools/list: the read tools only (the drafts make the others writes,
  // which the gateway never runs), each with server-everything's title and
  // annotations, and the pinned description and schema.
  const { tools } = await c.listTools();
  const listed = new Map(tools.map((x) => [x.name, x]));
  assert.deepEqual([...listed.keys()].sort(), [...reads].sort());
  const echo = listed.get("echo");
  assert.equal(echo.title, "Echo Tool");
  assert.deepEqual(echo.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  assert.equal(echo.inputSchema.additionalProperties, false);
  assert.equal(echo.inputSchema.properties.message.maxLength, 60000);

  const runId = id("run");
  const first = id();
  const sum = await call(c, "get-sum", { a: 2, b: 3 }, first, runId);
  assert.ok(!sum.isError, sum.text);
  assert.match(sum.text, /The sum of 2 and 3 is 5/);
  assert.equal(sum.json.tool_call_id, first);

  const again = await call(c, "get-sum", { a: 2, b: 3 }, first, runId);
  assert.equal(again.isError, true);
  assert.equal(again.json.error_code, "DUPLICATE_TOOL_CALL");
  assert.equal(again.json.tool_call_id, first);

  const noId = await c.callTool({ name: "get-sum", arguments: { a: 1, b: 1 }, _meta: { "io.github.toolcanon/runId": runId } });
  assert.equal(noId.isError, true);
  assert.equal(JSON.parse(noId.content[0].text).error_code, "INVALID_TOOL_CALL_ID");

  const big = "x".repeat(60000);
  const large = await call(c, "echo", { message: big }, id(), runId);
  assert.ok(!large.isError, large.text.slice(0, 300));
  assert.ok(large.text.length < 100000, `the agent got ${large.text.length} bytes`);
  assert.equal(large.json.truncated, true, large.text.slice(0, 300));
});

test("over streamable HTTP: initialize, list, call, duplicate id", async (t) => {
  const dir = tempDir(t);
  const addr = await redis(t);
  const { config } = await draft(dir);
  const g = await httpGateway(t, config, "--redis", addr);
  const c = await httpClient(t, g.url);
  const { tools } = await c.listTools();
  assert.ok(tools.some((x) => x.name === "echo"));
  const runId = id("run");
  const callId = id();
  const echo = await call(c, "echo", { message: "hello" }, callId, runId);
  assert.ok(!echo.isError, echo.text);
  assert.match(echo.text, /Echo: hello/);
  const dup = await call(c, "echo", { message: "hello" }, callId, runId);
  assert.equal(dup.json.error_code, "DUPLICATE_TOOL_CALL");
});

test("two gateways on one Redis share the record of every call", async (t) => {
  const dir = tempDir(t);
  const addr = await redis(t);
  const { config } = await draft(dir);
  const g = await httpGateway(t, config, "--redis", addr);
  const viaHTTP = await httpClient(t, g.url);
  const viaStdio = await stdioGateway(t, config, "--redis", addr);
  const runId = id("run");

  const callId = id();
  const first = await call(viaHTTP, "get-sum", { a: 20, b: 22 }, callId, runId);
  assert.ok(!first.isError, first.text);
  const second = await call(viaStdio, "get-sum", { a: 20, b: 22 }, callId, runId);
  assert.equal(second.json.error_code, "DUPLICATE_TOOL_CALL");

  // The same id at both at once: exactly one runs.
  for (let i = 0; i < 5; i++) {
    const both = id("race");
    const got = await Promise.all([
      call(viaHTTP, "get-sum", { a: i, b: 1 }, both, runId),
      call(viaStdio, "get-sum", { a: i, b: 1 }, both, runId),
    ]);
    const ready = got.filter((r) => !r.isError);
    assert.equal(ready.length, 1, got.map((r) => r.text).join(" | "));
    const other = got.find((r) => r.isError).json.error_code;
    assert.ok(["DUPLICATE_TOOL_CALL", "TOOL_CALL_IN_PROGRESS"].includes(other), other);
  }
});

test("a 2025-11-25 client's task: answered once the call is recorded, polled to its end, the call's own result", async (t) => {
  const dir = tempDir(t);
  const addr = await redis(t);
  const { config } = await draft(dir);
  const g = await httpGateway(t, config, "--redis", addr);
  const c = await httpClient(t, g.url);
  assert.deepEqual(c.getServerCapabilities().tasks, { cancel: {}, requests: { tools: { call: {} } } });
  const { tools } = await c.listTools();
  assert.equal(tools.find((x) => x.name === "get-sum").execution?.taskSupport, "optional");

  const runId = id("run");
  const callId = id();
  const params = { name: "get-sum", arguments: { a: 20, b: 22 }, _meta: { "io.github.toolcanon/toolCallId": callId, "io.github.toolcanon/runId": runId } };
  const seen = [];
  for await (const m of c.experimental.tasks.callToolStream(params)) seen.push(m);
  const created = seen.find((m) => m.type === "taskCreated");
  const result = seen.find((m) => m.type === "result");
  assert.ok(created && result, JSON.stringify(seen));
  assert.ok(created.task.taskId.startsWith("t1."), created.task.taskId);
  assert.equal(created.task.pollInterval, 1000);
  assert.match(result.result.content[0].text, /The sum of 20 and 22 is 42/);
  assert.equal(JSON.parse(result.result.content[0].text).tool_call_id, callId);
  assert.equal((await c.experimental.tasks.getTask(created.task.taskId)).status, "completed");

  // The same call again is the same task: it does not run twice.
  const again = [];
  for await (const m of c.experimental.tasks.callToolStream(params)) again.push(m);
  assert.equal(again.find((m) => m.type === "taskCreated")?.task.taskId, created.task.taskId, JSON.stringify(again));
  // The same id with other arguments is refused, naming the code.
  const other = [];
  for await (const m of c.experimental.tasks.callToolStream({ ...params, arguments: { a: 1, b: 1 } })) other.push(m);
  assert.match(other.find((m) => m.type === "error")?.error.message ?? "", /DUPLICATE_TOOL_CALL/, JSON.stringify(other));
});
