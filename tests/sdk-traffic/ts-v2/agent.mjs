// ACP v2 agent built with @agentclientprotocol/sdk's experimental v2 API
// (`@agentclientprotocol/sdk/experimental/v2`). Spawned by client.mjs through tee.py.
// Each prompt is answered with a receipt; the turn then runs as session/update upserts and
// ends with an idle state_update carrying the stop reason.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const M = acp.methods;
const text = (t) => ({ type: "text", text: t });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let nextSession = 1;
let nextMessage = 1;
// Turns waiting for a session/cancel, by session id.
const waiting = new Map();

async function update(client, sessionId, body) {
  await client.notify(M.client.session.update, { sessionId, update: body });
}

// The turn after the receipt: agent message chunks, a tool call upserted twice, idle.
async function turn(client, sessionId, words) {
  await sleep(20);
  const reply = `msg-${nextMessage++}`;
  await update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId: reply, content: text("Reading ") });
  await update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId: reply, content: text("the file.") });
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update", toolCallId: "call-1", title: "Read config.toml", kind: "read", status: "in_progress",
    locations: [{ path: "/workspace/demo/config.toml" }],
  });
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "completed",
    content: [{ type: "content", content: text("version = \"0.1.0\"") }],
  });
  await update(client, sessionId, { sessionUpdate: "agent_message", messageId: reply, content: [text(`Read it for: ${words}`)] });
  await update(client, sessionId, { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
}

const app = acp.agent({ name: "checkfu-sdk-traffic-agent-v2" })
  .onRequest(M.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: "checkfu-sdk-traffic-agent-v2", title: "SDK traffic agent (TypeScript, ACP v2)", version: "0.0.0" },
    capabilities: { session: { prompt: { image: {}, embeddedContext: {} }, additionalDirectories: {} }, auth: {} },
    authMethods: [],
  }))
  .onRequest(M.agent.session.new, () => ({ sessionId: `sess-${nextSession++}` }))
  .onRequest(M.agent.session.prompt, async ({ params, client }) => {
    const messageId = `msg-${nextMessage++}`;
    const words = params.prompt.map((b) => b.text ?? "").join(" ");
    await update(client, params.sessionId, { sessionUpdate: "state_update", state: "running" });
    await update(client, params.sessionId, { sessionUpdate: "user_message", messageId, content: params.prompt });
    if (words.includes("wait")) {
      // Runs until the client cancels it.
      waiting.set(params.sessionId, async () => {
        await update(client, params.sessionId, { sessionUpdate: "state_update", state: "idle", stopReason: "cancelled" });
      });
    } else {
      turn(client, params.sessionId, words).catch((e) => console.error(e));
    }
    return { messageId };
  })
  .onNotification(M.agent.session.cancel, async ({ params }) => {
    const stop = waiting.get(params.sessionId);
    waiting.delete(params.sessionId);
    if (stop) await stop();
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
