// ACP agent built with @agentclientprotocol/sdk (TypeScript SDK, stable v1 entrypoint).
// Serves one client over stdio. What it does on session/prompt depends on the
// first word of the prompt text, so one agent serves every scenario.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const M = acp.methods;
const CWD = "/workspace/demo";
const MODES = {
  currentModeId: "ask",
  availableModes: [
    { id: "ask", name: "Ask", description: "Ask before every change" },
    { id: "code", name: "Code", description: "Edit files freely" },
  ],
};
let model = "small";
let verbose = false;
const configOptions = () => [
  {
    id: "model", name: "Model", category: "model", type: "select", currentValue: model,
    options: [ { value: "small", name: "Small" }, { value: "large", name: "Large" } ],
  },
  { id: "verbose", name: "Verbose", type: "boolean", currentValue: verbose },
];

let nextSession = 1;
const sessions = new Map(); // sessionId -> { cwd, title }

function text(t) { return { type: "text", text: t }; }
function requireSession(sessionId) {
  if (!sessions.has(sessionId)) throw acp.RequestError.sessionNotFound(sessionId);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function update(client, sessionId, u) {
  await client.notify(M.client.session.update, { sessionId, update: u });
}

// The long turn: every update kind and every client-side method.
async function fullTurn(client, sessionId) {
  await update(client, sessionId, { sessionUpdate: "agent_thought_chunk", content: text("Reading the task.") });
  await update(client, sessionId, {
    sessionUpdate: "plan",
    entries: [
      { content: "Read config.toml", priority: "high", status: "in_progress" },
      { content: "Bump the version", priority: "medium", status: "pending" },
      { content: "Run the tests", priority: "low", status: "pending" },
    ],
  });
  await update(client, sessionId, {
    sessionUpdate: "available_commands_update",
    availableCommands: [
      { name: "test", description: "Run the test suite", input: { hint: "test filter" } },
      { name: "plan", description: "Show the plan" },
    ],
  });
  await update(client, sessionId, {
    sessionUpdate: "tool_call", toolCallId: "call-1", title: "Edit config.toml", kind: "edit", status: "pending",
    locations: [{ path: `${CWD}/config.toml`, line: 1 }], rawInput: { path: `${CWD}/config.toml` },
  });
  const perm = await client.request(M.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "call-1", title: "Edit config.toml", kind: "edit", status: "pending" },
    options: [
      { optionId: "allow", name: "Allow once", kind: "allow_once" },
      { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
      { optionId: "reject", name: "Reject once", kind: "reject_once" },
      { optionId: "reject-always", name: "Always reject", kind: "reject_always" },
    ],
  });
  const file = await client.request(M.client.fs.readTextFile, { sessionId, path: `${CWD}/config.toml`, line: 1, limit: 10 });
  const edited = file.content.replace("0.1.0", "0.2.0");
  await client.request(M.client.fs.writeTextFile, { sessionId, path: `${CWD}/config.toml`, content: edited });
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "completed",
    content: [
      { type: "diff", path: `${CWD}/config.toml`, oldText: file.content, newText: edited },
      { type: "content", content: text(`permission: ${perm.outcome.outcome}`) },
    ],
    rawOutput: { written: true },
  });

  const term = await client.createTerminal({
    sessionId, command: "cargo", args: ["test", "--quiet"], cwd: CWD,
    env: [{ name: "RUST_BACKTRACE", value: "1" }], outputByteLimit: 4096,
  });
  await update(client, sessionId, {
    sessionUpdate: "tool_call", toolCallId: "call-2", title: "cargo test", kind: "execute", status: "in_progress",
    content: [{ type: "terminal", terminalId: term.id }],
  });
  await term.currentOutput();
  await term.waitForExit();
  await term.kill();
  await term.release();
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-2", status: "completed", title: "cargo test (passed)" });

  const form = await client.request(M.client.elicitation.create, {
    sessionId, toolCallId: "call-2", mode: "form", message: "Which release channel?",
    requestedSchema: {
      type: "object", title: "Release",
      properties: {
        channel: { type: "string", title: "Channel", enum: ["stable", "beta"] },
        notes: { type: "boolean", title: "Write release notes", default: false },
      },
      required: ["channel"],
    },
  });
  await client.request(M.client.elicitation.create, {
    sessionId, mode: "url", message: "Sign in to the registry", elicitationId: "elic-1",
    url: "https://registry.example/login?state=fixed",
  });
  await client.notify(M.client.elicitation.complete, { elicitationId: "elic-1" });

  await update(client, sessionId, { sessionUpdate: "current_mode_update", currentModeId: "code" });
  await update(client, sessionId, { sessionUpdate: "config_option_update", configOptions: configOptions() });
  await update(client, sessionId, { sessionUpdate: "session_info_update", title: "Bump version", updatedAt: "2025-01-01T00:00:00Z" });
  await update(client, sessionId, { sessionUpdate: "usage_update", used: 1200, size: 200000, cost: { amount: 0.01, currency: "USD" } });
  await update(client, sessionId, { sessionUpdate: "notice", severity: "warning", title: "Context is 80% full" });
  await update(client, sessionId, { sessionUpdate: "compaction_update", compactionId: "cmp-1", status: "in_progress" });
  await update(client, sessionId, { sessionUpdate: "compaction_summary_chunk", compactionId: "cmp-1", content: text("Bumped version; tests pass.") });
  await update(client, sessionId, { sessionUpdate: "compaction_update", compactionId: "cmp-1", status: "completed", summary: [text("Bumped version; tests pass.")] });

  // Extension traffic towards the client: a notification, and a request the client does not know.
  await client.notify("_acme/progress", { sessionId, percent: 90 });
  try {
    await client.request("_acme/progress", { sessionId, percent: 95 });
  } catch (e) { /* -32601 expected */ }

  await update(client, sessionId, {
    sessionUpdate: "agent_message_chunk",
    content: text(`Done: channel ${form.action === "accept" ? form.content?.channel : form.action}.`),
  });
  return { stopReason: "end_turn", usage: { inputTokens: 1000, outputTokens: 200, totalTokens: 1200 } };
}

// A turn the client cancels with session/cancel while a permission request is open.
async function cancelTurn(client, sessionId) {
  await update(client, sessionId, { sessionUpdate: "tool_call", toolCallId: "call-9", title: "Delete build/", kind: "delete", status: "pending" });
  const perm = await client.request(M.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "call-9", title: "Delete build/", kind: "delete" },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" },
      { optionId: "reject", name: "Reject", kind: "reject_once" },
    ],
  });
  if (perm.outcome.outcome === "cancelled") {
    await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-9", status: "failed" });
    return { stopReason: "cancelled" };
  }
  return { stopReason: "end_turn" };
}

// The agent gives up on its own permission request with $/cancel_request.
async function abandonTurn(client, sessionId) {
  const ac = new AbortController();
  const pending = client.request(M.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "call-7", title: "Push to origin", kind: "other" },
    options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }],
  }, { cancellationSignal: ac.signal });
  await sleep(50);
  ac.abort();
  const perm = await pending;
  await update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: text(`gave up: ${perm.outcome.outcome}`) });
  return { stopReason: "end_turn" };
}

// Two sessions at once: each asks for permission and reads a file.
async function concurrentTurn(client, sessionId, tag) {
  await update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: text(`${tag}: starting`) });
  await update(client, sessionId, { sessionUpdate: "tool_call", toolCallId: `${tag}-read`, title: `Read ${tag}.txt`, kind: "read", status: "pending" });
  const perm = await client.request(M.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: `${tag}-read`, title: `Read ${tag}.txt` },
    options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }, { optionId: "reject", name: "Reject", kind: "reject_once" }],
  });
  const file = await client.request(M.client.fs.readTextFile, { sessionId, path: `${CWD}/${tag}.txt` });
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: `${tag}-read`, status: "completed", content: [{ type: "content", content: text(file.content) }] });
  await update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: text(`${tag}: ${perm.outcome.outcome}`) });
  return { stopReason: "end_turn" };
}

const app = acp.agent({ name: "checkfu-sdk-traffic-agent" })
  .onRequest(M.agent.initialize, ({ params }) => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, delete: {}, resume: {}, close: {}, additionalDirectories: {} },
      auth: { logout: {} },
    },
    authMethods: [{ id: "api-key", name: "API key", description: "Use a key from the environment" }],
    agentInfo: { name: "checkfu-sdk-traffic-agent", title: "SDK traffic agent (TypeScript)", version: "0.0.0" },
  }))
  .onRequest(M.agent.authenticate, () => ({}))
  .onRequest(M.agent.logout, () => ({}))
  .onRequest(M.agent.session.new, ({ params }) => {
    const sessionId = `sess-${nextSession++}`;
    sessions.set(sessionId, { cwd: params.cwd, title: null });
    return { sessionId, modes: MODES, configOptions: configOptions() };
  })
  .onRequest(M.agent.session.load, async ({ params, client }) => {
    requireSession(params.sessionId);
    await update(client, params.sessionId, { sessionUpdate: "user_message_chunk", content: text("Bump the version.") });
    await update(client, params.sessionId, { sessionUpdate: "agent_message_chunk", content: text("On it.") });
    return { modes: MODES, configOptions: configOptions() };
  })
  .onRequest(M.agent.session.list, () => ({
    sessions: [...sessions.entries()].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd, title: s.title, updatedAt: "2025-01-01T00:00:00Z" })),
  }))
  .onRequest(M.agent.session.resume, ({ params }) => {
    requireSession(params.sessionId);
    return { modes: MODES, configOptions: configOptions() };
  })
  .onRequest(M.agent.session.close, ({ params }) => { requireSession(params.sessionId); return {}; })
  .onRequest(M.agent.session.delete, ({ params }) => { sessions.delete(params.sessionId); return {}; })
  .onRequest(M.agent.session.setMode, async ({ params, client }) => {
    requireSession(params.sessionId);
    await update(client, params.sessionId, { sessionUpdate: "current_mode_update", currentModeId: params.modeId });
    return {};
  })
  .onRequest(M.agent.session.setConfigOption, ({ params }) => {
    requireSession(params.sessionId);
    if (params.configId === "model") model = params.value;
    else if (params.configId === "verbose") verbose = params.value;
    else throw acp.RequestError.invalidParams({ configId: params.configId }, "unknown config option");
    return { configOptions: configOptions() };
  })
  .onRequest(M.agent.session.prompt, async ({ params, client, signal }) => {
    requireSession(params.sessionId);
    const first = params.prompt.find((b) => b.type === "text")?.text ?? "";
    const [word, arg] = first.split(" ");
    switch (word) {
      case "full": return fullTurn(client, params.sessionId);
      case "cancel": return cancelTurn(client, params.sessionId);
      case "abandon": return abandonTurn(client, params.sessionId);
      case "concurrent": return concurrentTurn(client, params.sessionId, arg);
      case "stop":
        await update(client, params.sessionId, { sessionUpdate: "agent_message_chunk", content: text(`stopping with ${arg}`) });
        return { stopReason: arg };
      case "hang":
        // Waits until the client withdraws the request with $/cancel_request.
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        throw acp.RequestError.requestCancelled();
      default:
        await update(client, params.sessionId, { sessionUpdate: "agent_message_chunk", content: text("ok") });
        return { stopReason: "end_turn" };
    }
  })
  .onNotification(M.agent.session.cancel, () => { /* the pending permission request is answered `cancelled` by the client */ })
  .onNotification("_acme/progress", (p) => p, () => { /* extension notification: accepted and ignored */ });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
