// The probe's ACP v2 reference agent, written with the official TypeScript SDK's v2 API
// (`@agentclientprotocol/sdk/experimental/v2`, 2.4.0, installed by install.sh beside agent.mjs).
//
// Honest: it declares only what it serves, which is what agent.mjs serves in v1 (the shared part
// is mechanisms.mjs): subagents, native steering, a cooperative interrupt, built-in tool scoping,
// staged files, a native checkpoint, and with `--structured response_format` a structured
// output. `initialize` answers protocol version 2 with `info` and object-marker capabilities
// (`session.prompt.embeddedContext: {}`: an embedded resource's text goes to the model after the
// prompt's words; `session.mcp.stdio: {}`: the stdio MCP servers session/new grants are started
// and their tools offered to the model); a v1 `initialize` is refused by the SDK itself with
// -32022 naming the versions it speaks. The v2 session baseline is served: session/new,
// session/list, session/resume (the session's messages replayed as keyed upserts, each with the
// identifier it had) and session/close.
//
// A turn, as v2 runs it: the prompt is answered with a receipt (`messageId`); `running`, then the
// user message echoed as `user_message` with the receipt's `messageId`; the prompt's resource
// links are read by the agent itself (v2 has no client `fs/*`) and their text goes to the model
// after the prompt's words, with the steers queued since the last turn before them; the model the
// probe's relay serves (OPENAI_BASE_URL, OPENAI_API_KEY, Chat Completions as plain JSON) is asked,
// with the built-in tools the session's checkfu.builtin_tools admits and the MCP servers' tools,
// and its answer streamed as `agent_message_chunk`s (the last carrying checkfu.journal_checkpoint)
// and upserted whole as `agent_message`, under one agent `messageId`. A worker subagent then asks
// the model on its own and reports, its updates attributed by checkfu.subagent. The turn ends
// with an idle `state_update` carrying the stop reason and `checkfu.turn` (counted as it went) in
// its `_meta`. A transient fault (429, 500, 503, 529, an answer cut short) is retried after its
// retry-after. A session/cancel aborts the model call in flight (fetch's AbortSignal) and the turn
// ends with an idle whose stop reason is `cancelled`; a model that cannot be reached at all, with
// one whose stop reason is `error`. A steer is acknowledged `queued`; an interrupt while a model
// call is in flight is acknowledged `draining`, the answer shown whole, and the turn ends idle
// `cancelled` with no more work.
//
// agent.mjs's over-declaring twins are twins here too (`--narrate-subagent`,
// `--run-outside-scope`, `--ignore-staged`, `--no-checkpoint`, `--ignore-resume`, `--ignore-mcp`,
// `--narrate-mcp-call`, `--drop-steer`, `--truncate-drain`, `--accept-invalid`).
//
// Hostile twins, each a flag (the Rust fixture agent's v2 twins take the same names):
//   --no-receipt-id         the prompt's receipt has no `messageId`
//   --boolean-capability    `embeddedContext` declared as `true`, not an object marker
//   --unprefixed-update     a custom update kind `scratchpad` sent without the `_` prefix
//   --idle-without-running  the turn's idle `state_update` with no `running` before it
//   --v1-answer             the turn answered in the prompt's result as in v1
//                           (`{ stopReason }`: no receipt, no idle)
//   --never-cancelled       a session/cancel is ignored: the model's answer is shown and the
//                           turn ends `end_turn`, never with an idle saying `cancelled`
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import {
  askModel, builtinsOf, checkpointMeta, HISTORY, journal, JOURNAL_TEXT, JOURNAL_TURNS, readable, restore, resumedTurns, servers,
  startMcp, staged, structuredAnswer, STRUCTURED, text, twin,
} from "./mechanisms.mjs";

const M = acp.methods;
const NAME = "checkfu-probe-ts-agent-v2";
// Bounds on what a client can make this agent hold: sessions, and messages kept per session.
const MAX_SESSIONS = 64;
const MAX_MESSAGES = 256;
// sessionId -> { cwd, messages: [{ sessionUpdate, messageId, content }], turn: AbortController | null,
//   queued: [steers], draining, runtimeConfig, builtinTools, outputSchema, mcp }
const sessions = new Map();
let nextId = 1;
const fresh = (prefix) => `${prefix}-${nextId++}`;

async function update(client, sessionId, body) {
  await client.notify(M.client.session.update, { sessionId, update: body });
}

// What the prompt says, in order: its text blocks, then the text of its embedded resources
// (the `embeddedContext` this agent declares).
function said(prompt) {
  const words = prompt.filter((b) => b.type === "text").map((b) => b.text);
  const embedded = prompt.filter((b) => b.type === "resource" && typeof b.resource?.text === "string")
    .map((b) => `[${b.resource.uri}]\n${b.resource.text}`);
  return [...words, ...embedded].join("\n");
}

// A message kept for session/resume's replay, the oldest dropped past the bound.
function keep(session, message) {
  session.messages.push(message);
  if (session.messages.length > MAX_MESSAGES) session.messages.shift();
}

// The worker subagent, after the parent's answer: it asks the model on its own (the
// `--narrate-subagent` twin reports words no model call gave it) and reports, each update of it
// attributed by checkfu.subagent, with a tool call of its own upserted pending, then completed.
async function worker(client, sessionId, session, turn, report) {
  const subagent = fresh("worker");
  const sub = { "checkfu.subagent": { phase: "activity", subagent } };
  const life = (phase, more) => ({ sessionUpdate: "session_info_update", updatedAt: new Date().toISOString(),
    _meta: { "checkfu.subagent": { phase, subagent, ...more } } });
  await update(client, sessionId, life("started", { name: "worker" }));
  const found = twin("--narrate-subagent")
    ? "I read the notes."
    : await askModel("You are the worker subagent: read the notes and report.", [], session.runtimeConfig, turn, report, undefined, 0);
  const toolCallId = fresh("tool");
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId, title: "Read notes", kind: "read", status: "pending", _meta: sub });
  await update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId: fresh("worker-message"), content: text(` (worker: ${found})`), _meta: sub });
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId, status: "completed", _meta: sub });
  await update(client, sessionId, life("completed", { disposition: "completed" }));
}

// The turn's answer from the model: under the session's output schema, a validated value.
async function answerOf(client, sessionId, session, prompt, turn, report, signal) {
  const words = said(prompt) + (await staged(prompt, sessionId, client));
  const steers = session.queued;
  session.queued = [];
  const builtins = builtinsOf(session, sessionId, client);
  const answer = session.outputSchema === undefined
    ? await askModel(words, steers, session.runtimeConfig, turn, report, signal, HISTORY, builtins)
    : await structuredAnswer(words, steers, session.runtimeConfig, turn, report, signal, session.outputSchema, builtins);
  journal.push([words.slice(0, JOURNAL_TEXT), String(answer).slice(0, JOURNAL_TEXT)]);
  if (journal.length > JOURNAL_TURNS) journal.shift();
  return answer;
}

// The turn after the receipt: the model asked, its answer streamed and upserted, the worker, then idle.
async function runTurn(client, sessionId, session, prompt) {
  const began = Date.now();
  const turn = { calls: 0, retries: 0, overflowRecoveries: 0 };
  const abort = new AbortController();
  session.turn = abort;
  session.draining = false;
  const telemetry = () => ({ "checkfu.turn": { execution: "shell", shell_commands: 0, filesystem_commands: 0, mcp_calls: 0,
    model_calls: turn.calls, model_transient_retries: turn.retries, model_overflow_recoveries: turn.overflowRecoveries,
    wall_time_ms: Date.now() - began } });
  const report = (claim) =>
    update(client, sessionId, { sessionUpdate: "session_info_update", updatedAt: new Date().toISOString(), _meta: { "checkfu.compaction": claim } });
  let stopReason = "end_turn";
  let failure = null;
  try {
    const answer = await answerOf(client, sessionId, session, prompt, turn, report, abort.signal);
    session.turn = null;
    const messageId = fresh("agent");
    const pieces = answer.match(/[\s\S]{1,64}/g) ?? [""];
    for (const [i, piece] of pieces.entries()) {
      const last = i === pieces.length - 1;
      await update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId, content: text(piece), ...(last ? { _meta: checkpointMeta() } : {}) });
    }
    const content = [text(answer)];
    await update(client, sessionId, { sessionUpdate: "agent_message", messageId, content });
    keep(session, { sessionUpdate: "agent_message", messageId, content });
    // Drained: the answer in flight is out whole; no new work.
    if (session.draining) stopReason = "cancelled";
    else await worker(client, sessionId, session, turn, report);
    if (twin("--unprefixed-update")) {
      // A custom kind must be `_`-prefixed; the SDK sends notifications unvalidated, so this
      // goes out through it as written.
      await update(client, sessionId, { sessionUpdate: "scratchpad", messageId: fresh("scratch"), note: "thinking aloud" });
    }
  } catch (error) {
    if (abort.signal.aborted) {
      stopReason = "cancelled";
    } else {
      // The model could not be reached at all (or the client went): the turn still ends, idle
      // with v2's `error` stop reason and the failure as a JSON-RPC error object.
      stopReason = "error";
      failure = { code: -32603, message: String(error?.message ?? error).slice(0, 500) };
    }
  } finally {
    session.turn = null;
  }
  const cut = stopReason === "cancelled" && !session.draining;
  session.draining = false;
  // A cancelled turn's call was cut off wherever it was, so it claims no counts (as agent.mjs).
  const idle = { sessionUpdate: "state_update", state: "idle", stopReason, ...(failure ? { error: failure } : {}) };
  await update(client, sessionId, cut ? idle : { ...idle, _meta: telemetry() });
}

// The v1 answer the `--v1-answer` twin gives: the turn run inside the prompt request and its
// stop reason returned as the request's result, with no receipt and no state_update at all.
async function answerAsV1(client, sessionId, session, prompt) {
  const turn = { calls: 0, retries: 0, overflowRecoveries: 0 };
  const abort = new AbortController();
  session.turn = abort;
  try {
    const answer = await askModel(said(prompt), [], undefined, turn, async () => {}, abort.signal, HISTORY);
    await update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId: fresh("agent"), content: text(answer) });
    return { stopReason: "end_turn" };
  } catch (error) {
    if (abort.signal.aborted) return { stopReason: "cancelled" };
    throw error;
  } finally {
    session.turn = null;
  }
}

// `--boolean-capability` declares with a boolean what the honest agent declares with `{}`. The
// SDK checks an initialize answer with its lenient reader (which drops the boolean from its own
// view) and then sends the answer as the handler returned it, so the boolean goes out through it.
const embeddedContext = twin("--boolean-capability") ? true : {};
const capabilities = { session: { prompt: { embeddedContext }, mcp: { stdio: {} } } };
// What it serves, declared as agent.mjs declares it.
const declaration = { subagents: "observed", steer: "native", interrupt: "cooperative", builtin_tool_scoping: "enforced",
  staged_files: "resource_links", native_checkpoint: "external_custody", ...(STRUCTURED ? { structured_output: STRUCTURED } : {}) };

const app = acp.agent({ name: NAME })
  .onRequest(M.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: NAME, title: "Checkfu probe reference agent (TypeScript SDK, ACP v2)", version: "1.0.0" },
    capabilities,
    authMethods: [],
    _meta: { "checkfu.capabilities": declaration },
  }))
  .onRequest(M.agent.session.new, async ({ params }) => {
    if (sessions.size >= MAX_SESSIONS) throw acp.RequestError.invalidRequest(undefined, `at most ${MAX_SESSIONS} sessions`);
    const meta = params._meta ?? {};
    const outputSchema = meta["checkfu.output_schema"];
    // An output schema is authority: one this agent cannot hold to is refused, before any work.
    if (outputSchema !== undefined && (STRUCTURED !== "response_format" || !readable(outputSchema))) {
      throw acp.RequestError.invalidParams(undefined, "checkfu.output_schema is not supported here");
    }
    if (meta["checkfu.resume"] !== undefined) {
      const turns = resumedTurns(meta["checkfu.resume"]);
      if (turns === null) throw acp.RequestError.invalidParams(undefined, "checkfu.resume: the state is not one of this agent's checkpoints");
      if (!twin("--ignore-resume")) restore(turns);
    }
    const sessionId = fresh("ts-v2");
    const mcp = await startMcp(params.mcpServers, params.cwd);
    sessions.set(sessionId, { cwd: params.cwd, messages: [], turn: null, queued: [], draining: false, mcp, outputSchema,
      runtimeConfig: meta["checkfu.runtime_config"], builtinTools: meta["checkfu.builtin_tools"] });
    return { sessionId };
  })
  .onRequest(M.agent.session.list, () => ({
    sessions: [...sessions].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd })),
  }))
  .onRequest(M.agent.session.resume, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (session === undefined) throw acp.RequestError.sessionNotFound(params.sessionId);
    // Replay: each message upserted whole under the identifier it had.
    for (const message of session.messages) await update(client, params.sessionId, message);
    return {};
  })
  .onRequest(M.agent.session.close, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session === undefined) throw acp.RequestError.sessionNotFound(params.sessionId);
    session.turn?.abort();
    sessions.delete(params.sessionId);
    return {};
  })
  .onRequest(M.agent.session.prompt, async ({ params, client }) => {
    const { sessionId, prompt } = params;
    const session = sessions.get(sessionId);
    if (session === undefined) throw acp.RequestError.sessionNotFound(sessionId);
    if (session.turn !== null) throw acp.RequestError.invalidRequest(undefined, "a turn is already running in this session");
    if (twin("--v1-answer")) return answerAsV1(client, sessionId, session, prompt);
    const messageId = fresh("user");
    if (!twin("--idle-without-running")) await update(client, sessionId, { sessionUpdate: "state_update", state: "running" });
    await update(client, sessionId, { sessionUpdate: "user_message", messageId, content: prompt });
    keep(session, { sessionUpdate: "user_message", messageId, content: prompt });
    // The turn goes on after the receipt; its end is the idle state_update.
    runTurn(client, sessionId, session, prompt).catch((error) => console.error(`${NAME}: ${error?.message ?? error}`));
    // The SDK sends a prompt's result as the handler returns it, so the receipt without its
    // required `messageId` goes out through it.
    return twin("--no-receipt-id") ? {} : { messageId };
  })
  .onNotification(M.agent.session.cancel, ({ params }) => {
    // The `--never-cancelled` twin lets the turn run on to its answer and end `end_turn`.
    if (!twin("--never-cancelled")) sessions.get(params.sessionId)?.turn?.abort();
  })
  .onRequest("_checkfu/session/steer", (p) => p, ({ params }) => {
    // Queued for the session's next model request (`--drop-steer`: acknowledged, never sent).
    const session = sessions.get(params.sessionId);
    if (session !== undefined && !twin("--drop-steer")) session.queued = [...session.queued, String(params.content)].slice(-16);
    return { disposition: "queued" };
  })
  .onRequest("_checkfu/session/interrupt", (p) => p, ({ params }) => {
    // Only a turn with its model call still in flight has anything to drain.
    const session = sessions.get(params.sessionId);
    if (session?.turn == null) return { disposition: "refused" };
    session.draining = true;
    // The twin says `draining` and cuts the answer off instead.
    if (twin("--truncate-drain")) setTimeout(() => session.turn?.abort(), 0);
    return { disposition: "draining" };
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
for (const child of servers) child.kill();
