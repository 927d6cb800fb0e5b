// The probe's ACP v2 reference agent, written with the official TypeScript SDK's v2 API
// (`@agentclientprotocol/sdk/experimental/v2`, 2.4.0, installed by install.sh beside agent.mjs).
//
// Honest: it declares only what it serves. `initialize` answers protocol version 2 with `info`
// and object-marker capabilities (`session.prompt.embeddedContext: {}`: an embedded resource's
// text goes to the model after the prompt's words); a v1 `initialize` is refused by the SDK
// itself with -32022 naming the versions it speaks. The v2 session baseline is served:
// session/new, session/list, session/resume (the session's messages replayed as keyed upserts,
// each with the identifier it had) and session/close.
//
// A turn, as v2 runs it: the prompt is answered with a receipt (`messageId`); `running`, then the
// user message echoed as `user_message` with the receipt's `messageId`; the model the probe's
// relay serves (OPENAI_BASE_URL, OPENAI_API_KEY, Chat Completions as plain JSON, as agent.mjs
// asks it) is asked, and its answer streamed as `agent_message_chunk`s and upserted whole as
// `agent_message`, under one agent `messageId`; the turn ends with an idle `state_update`
// carrying the stop reason and `checkfu.turn` (counted as it went) in its `_meta`. A transient
// fault (429, 500, 503, 529, an answer cut short) is retried after its retry-after. A
// session/cancel aborts the model call in flight (fetch's AbortSignal) and the turn ends with an
// idle whose stop reason is `cancelled`; a model that cannot be reached at all, with one whose
// stop reason is `error`.
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

const M = acp.methods;
const NAME = "checkfu-probe-ts-agent-v2";
const ATTEMPTS = 6;
// Bounds on what a client can make this agent hold: sessions, and messages kept per session.
const MAX_SESSIONS = 64;
const MAX_MESSAGES = 256;
const MAX_RETRY_AFTER_S = 10;
const twin = (flag) => process.argv.includes(flag);
const text = (t) => ({ type: "text", text: t });
// sessionId -> { cwd, messages: [{ sessionUpdate, messageId, content }], turn: AbortController | null }
const sessions = new Map();
let nextId = 1;
const fresh = (prefix) => `${prefix}-${nextId++}`;

async function update(client, sessionId, body) {
  await client.notify(M.client.session.update, { sessionId, update: body });
}

// A wait the turn's cancel can cut short.
function wait(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

// The model the probe's relay serves, asked until it answers: a transient fault is tried again
// after its retry-after. `turn` counts the calls the relay served (faults too) and the retries.
async function askModel(said, turn, signal) {
  const messages = [{ role: "user", content: said }];
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const response = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
      method: "POST",
      signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
      body: JSON.stringify({ model: "ts-fixture-v2", messages }),
    });
    turn.calls += 1;
    if (response.ok) {
      const answer = await response.json().catch(() => null);
      const content = answer?.choices?.[0]?.message?.content;
      if (answer !== null) return typeof content === "string" ? content : "(no answer)";
    } else {
      await response.text();
    }
    if (![429, 500, 503, 529].includes(response.status) && !response.ok) return `(the model call was refused: ${response.status})`;
    // A transient fault, or an answer cut short: the same request again, after the wait.
    if (attempt === ATTEMPTS) break;
    turn.retries += 1;
    // The relay's retry-after, bounded: a wait longer than that is not waited out.
    const after = Number(response.headers.get("retry-after") ?? "0.1");
    await wait(Math.min(Number.isFinite(after) && after > 0 ? after : 0.1, MAX_RETRY_AFTER_S) * 1000, signal);
  }
  return "(the model kept refusing)";
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

// The turn after the receipt: the model asked, its answer streamed and upserted, then idle.
async function runTurn(client, sessionId, session, prompt) {
  const began = Date.now();
  const turn = { calls: 0, retries: 0 };
  const abort = new AbortController();
  session.turn = abort;
  const telemetry = () => ({ "checkfu.turn": { execution: "shell", shell_commands: 0, filesystem_commands: 0, mcp_calls: 0,
    model_calls: turn.calls, model_transient_retries: turn.retries, model_overflow_recoveries: 0, wall_time_ms: Date.now() - began } });
  let stopReason = "end_turn";
  let failure = null;
  try {
    const answer = await askModel(said(prompt), turn, abort.signal);
    const messageId = fresh("agent");
    for (const piece of answer.match(/[\s\S]{1,64}/g) ?? [""]) {
      await update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId, content: text(piece) });
    }
    const content = [text(answer)];
    await update(client, sessionId, { sessionUpdate: "agent_message", messageId, content });
    keep(session, { sessionUpdate: "agent_message", messageId, content });
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
  // A cancelled turn's call was cut off wherever it was, so it claims no counts (as agent.mjs).
  const idle = { sessionUpdate: "state_update", state: "idle", stopReason, ...(failure ? { error: failure } : {}) };
  await update(client, sessionId, stopReason === "cancelled" ? idle : { ...idle, _meta: telemetry() });
}

// The v1 answer the `--v1-answer` twin gives: the turn run inside the prompt request and its
// stop reason returned as the request's result, with no receipt and no state_update at all.
async function answerAsV1(client, sessionId, session, prompt) {
  const turn = { calls: 0, retries: 0 };
  const abort = new AbortController();
  session.turn = abort;
  try {
    const answer = await askModel(said(prompt), turn, abort.signal);
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
const capabilities = { session: { prompt: { embeddedContext } } };

const app = acp.agent({ name: NAME })
  .onRequest(M.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: NAME, title: "Checkfu probe reference agent (TypeScript SDK, ACP v2)", version: "1.0.0" },
    capabilities,
    authMethods: [],
  }))
  .onRequest(M.agent.session.new, ({ params }) => {
    if (sessions.size >= MAX_SESSIONS) throw acp.RequestError.invalidRequest(undefined, `at most ${MAX_SESSIONS} sessions`);
    const sessionId = fresh("ts-v2");
    sessions.set(sessionId, { cwd: params.cwd, messages: [], turn: null });
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
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
