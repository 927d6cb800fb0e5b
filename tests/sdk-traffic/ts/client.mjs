// ACP client built with @agentclientprotocol/sdk (TypeScript SDK, stable v1 entrypoint).
// Usage: node client.mjs SCENARIO OUT_DIR
// Spawns the agent through tee.py, which records the wire traffic as ts-SCENARIO.*.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";

const M = acp.methods;
const here = path.dirname(fileURLToPath(import.meta.url));
const [scenario, outDir] = process.argv.slice(2);
const CWD = "/workspace/demo";
const FILES = {
  [`${CWD}/config.toml`]: "version = \"0.1.0\"\nname = \"demo\"\n",
  [`${CWD}/a.txt`]: "alpha\n",
  [`${CWD}/b.txt`]: "beta\n",
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ type: "text", text: t });

// Concurrent scenario: answer the two permission requests only once both are
// open, and the second one first, so the responses cross on the wire.
const openPermissions = [];
let releasePermissions;
const bothOpen = new Promise((r) => { releasePermissions = r; });

const app = acp.client({ name: "checkfu-sdk-traffic-client" })
  .onRequest(M.client.session.requestPermission, async ({ params, agent, signal }) => {
    const id = params.toolCall.toolCallId;
    if (id === "call-9") {
      // The user cancels the turn while the agent waits for permission.
      await agent.notify(M.agent.session.cancel, { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    if (id === "call-7") {
      // Never answered by the user; the agent withdraws it with $/cancel_request.
      if (!signal.aborted) await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      return { outcome: { outcome: "cancelled" } };
    }
    if (scenario === "concurrent") {
      const mine = new Promise((r) => openPermissions.push({ id, r }));
      if (openPermissions.length === 2) releasePermissions();
      await bothOpen;
      if (openPermissions.length === 2 && openPermissions[1].id === id) {
        setTimeout(() => openPermissions[0].r(), 20);
      }
      if (openPermissions[1].id === id) openPermissions[1].r();
      await mine;
    }
    return { outcome: { outcome: "selected", optionId: "allow" } };
  })
  .onRequest(M.client.fs.readTextFile, ({ params }) => {
    const content = FILES[params.path];
    if (content === undefined) throw acp.RequestError.resourceNotFound(params.path);
    return { content };
  })
  .onRequest(M.client.fs.writeTextFile, ({ params }) => { FILES[params.path] = params.content; return {}; })
  .onRequest(M.client.terminal.create, () => ({ terminalId: "term-1" }))
  .onRequest(M.client.terminal.output, () => ({ output: "test result: ok. 3 passed\n", truncated: false, exitStatus: { exitCode: 0, signal: null } }))
  .onRequest(M.client.terminal.waitForExit, () => ({ exitCode: 0, signal: null }))
  .onRequest(M.client.terminal.kill, () => ({}))
  .onRequest(M.client.terminal.release, () => ({}))
  .onRequest(M.client.elicitation.create, ({ params }) =>
    params.mode === "form" ? { action: "accept", content: { channel: "beta", notes: true } } : { action: "decline" })
  .onNotification(M.client.elicitation.complete, () => {})
  .onNotification(M.client.session.update, () => {})
  .onNotification("_acme/progress", (p) => p, () => {});

async function expectError(promise, label) {
  try {
    await promise;
    console.error(`${label}: unexpectedly succeeded`);
  } catch (e) {
    if (!(e instanceof acp.RequestError)) throw e;
  }
}

const clientCapabilities = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  elicitation: { form: {}, url: {} },
  session: { configOptions: {}, notices: {}, compaction: {} },
};

async function initialize(ctx) {
  const init = await ctx.request(M.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name: "checkfu-sdk-traffic-client", title: "SDK traffic client (TypeScript)", version: "0.0.0" },
  });
  if (init.authMethods?.length) await ctx.request(M.agent.authenticate, { methodId: init.authMethods[0].id });
  return init;
}

const scenarios = {
  async lifecycle(ctx) {
    // Before initialize the SDK agent refuses everything else (-32600).
    await expectError(ctx.request(M.agent.session.new, { cwd: CWD, mcpServers: [] }), "new before init");
    await initialize(ctx);
    const { sessionId } = await ctx.request(M.agent.session.new, {
      cwd: CWD, additionalDirectories: ["/workspace/shared"],
      mcpServers: [{ name: "files", command: "/usr/bin/mcp-files", args: ["--root", CWD], env: [{ name: "LOG", value: "0" }] }],
    });
    await ctx.request(M.agent.session.load, { sessionId, cwd: CWD, mcpServers: [] });
    await ctx.request(M.agent.session.setMode, { sessionId, modeId: "code" });
    await ctx.request(M.agent.session.setConfigOption, { sessionId, configId: "model", value: "large" });
    await ctx.request(M.agent.session.setConfigOption, { sessionId, configId: "verbose", type: "boolean", value: true });
    await ctx.request(M.agent.session.list, { cwd: CWD });
    await ctx.request(M.agent.session.resume, { sessionId, cwd: CWD, mcpServers: [] });
    await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("hello"), { type: "resource_link", uri: `file://${CWD}/config.toml`, name: "config.toml" }] });
    // Errors.
    await expectError(ctx.request(M.agent.session.load, { sessionId: "sess-404", cwd: CWD, mcpServers: [] }), "load unknown");
    await expectError(ctx.request(M.agent.session.setConfigOption, { sessionId, configId: "colour", value: "red" }), "unknown config");
    await expectError(ctx.request("_acme/progress", { percent: 10 }), "unknown extension request");
    await ctx.notify("_acme/progress", { percent: 20 });
    await ctx.request(M.agent.session.close, { sessionId });
    await ctx.request(M.agent.session.delete, { sessionId });
    await ctx.request(M.agent.logout, {});
  },

  // Deliberately malformed requests, sent untyped through ctx.request; the SDK
  // agent answers -32602. These messages do NOT validate against the schema.
  async invalid(ctx) {
    await initialize(ctx);
    const { sessionId } = await ctx.request(M.agent.session.new, { cwd: CWD, mcpServers: [] });
    await expectError(ctx.request("session/set_mode", { sessionId }), "set_mode without modeId");
    await expectError(ctx.request("session/prompt", { sessionId, prompt: "a string, not content blocks" }), "prompt as string");
    await expectError(ctx.request("session/new", [CWD]), "params as an array");
  },

  async turn(ctx) {
    await initialize(ctx);
    const { sessionId } = await ctx.request(M.agent.session.new, { cwd: CWD, mcpServers: [] });
    await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("full turn please")] });
    for (const reason of ["max_tokens", "max_turn_requests", "refusal"]) {
      await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text(`stop ${reason}`)] });
    }
    await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("cancel this turn")] });
    await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("abandon permission")] });
    // The client withdraws a prompt with $/cancel_request.
    const ac = new AbortController();
    const hung = ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("hang")] }, { cancellationSignal: ac.signal });
    await sleep(50);
    ac.abort();
    await expectError(hung, "hang");
  },

  async concurrent(ctx) {
    await initialize(ctx);
    const a = await ctx.request(M.agent.session.new, { cwd: CWD, mcpServers: [] });
    const b = await ctx.request(M.agent.session.new, { cwd: CWD, mcpServers: [] });
    await Promise.all([
      ctx.request(M.agent.session.prompt, { sessionId: a.sessionId, prompt: [text("concurrent a")] }),
      ctx.request(M.agent.session.prompt, { sessionId: b.sessionId, prompt: [text("concurrent b")] }),
    ]);
  },
};

if (!scenarios[scenario]) {
  console.error(`unknown scenario ${scenario}; one of ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
const child = spawn("python3", [path.join(here, "tee.py"), outDir, `ts-${scenario}`, "--", process.execPath, path.join(here, "agent.mjs")], {
  stdio: ["pipe", "pipe", "inherit"],
  env: { ...process.env, NODE_PATH: process.env.NODE_PATH ?? "" },
});
const exited = new Promise((r) => child.on("exit", r));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
await app.connectWith(stream, (ctx) => scenarios[scenario](ctx));
child.stdin.end();
const code = await exited;
if (code !== 0) { console.error(`tee/agent exited with ${code}`); process.exit(1); }
