// The probe's fixture agent written with the official TypeScript ACP SDK
// (@agentclientprotocol/sdk 2.4.0, installed by install.sh). It declares subagents, native
// steering and a cooperative interrupt in checkfu.capabilities, answers the prompt with what the
// model behind the probe's relay says (Node's own fetch, Chat Completions as plain JSON), runs
// one subagent that asks the model on its own and a tool call that asks permission and writes and reads a file in the
// session's cwd, acknowledges a steer through the SDK's extension-request handler, and ends the
// turn with checkfu.turn telemetry counted as it went.
//
// A transient fault (429, 500, 503, 529, or an answer cut short) is retried after its
// retry-after. A session/cancel aborts the model call in flight (fetch's AbortSignal) and the
// turn answers `cancelled`, as ACP asks. A steer is acknowledged `queued` and goes to the model
// with the next prompt, before it. A cooperative interrupt is acknowledged `draining`: the model
// call in flight runs to its end, its answer is shown whole, and the turn stops there.
//
// `--history N` opens each conversation with N earlier exchanges. Under a
// checkfu.runtime_config that admits a compaction policy, a context-length error of the model
// makes it drop its oldest messages until they fit the window (by the relay's published rule:
// four bytes a token over every string of the message list), report that in
// checkfu.compaction and ask again; without a policy it must not compact, and does not.
//
// It declares builtin_tool_scoping and staged_files too. Handed a checkfu.builtin_tools list in
// session/new, it offers the model its built-in tools (`write`, `bash`, by the contract's
// vocabulary) that the list admits, and refuses a call of any other back to the model before it
// runs. The prompt's resource links are read in order (fs/read_text_file) and their text goes
// to the model after the prompt's words.
// `--structured response_format` also declares `structured_output: response_format`: under a
// session's checkfu.output_schema, the turn's answer is asked for in Chat Completions'
// `response_format` with that exact schema, validated before it is shown, and a broken one goes
// back to the model with a correction (`--accept-invalid`, a hostile twin, shows it as it came).
// The validator covers the keywords a small schema uses (type, properties, required,
// additionalProperties: false, enum, const, minimum, maximum, minLength, maxLength, items); a
// schema past them is refused at session/new, as authority is fail-closed.
//
// Hostile twins, each a flag, each a claim its own trace would carry but the relay's record
// refutes: `--lie-turn` claims no model call in checkfu.turn; `--ignore-cancel` lets a
// session/cancel go unheeded; `--call-after-cancel` aborts the call in flight, then asks the
// model once more; `--truncate-drain` acknowledges `draining`, then aborts the call and ends the
// turn; `--drop-steer` acknowledges a steer `queued` and never sends it; `--run-outside-scope`
// runs a built-in tool the handed list leaves out; `--ignore-staged` never reads the links.
//
// It declares native_checkpoint: external_custody. Every answer's message chunk carries a
// checkfu.journal_checkpoint whose state is its turns (each prompt and answer, hex-encoded JSON,
// the last 8, each cut to 4096 characters); a session/new carrying checkfu.resume with such a
// state opens every model conversation with those turns, so a fresh process, with nothing of the
// first one's on disk, goes on where it stopped. A resume state it did not write is refused.
// `--no-checkpoint` never emits one; `--ignore-resume` takes checkfu.resume and drops it (twins).
//
// The stdio MCP servers session/new grants in `mcpServers` are started in the session's cwd,
// initialized and asked for their tools, which the model is offered as `mcp__SERVER__TOOL`; a
// call of one goes to its server as `tools/call`. `--ignore-mcp` starts none; `--narrate-mcp-call`
// answers the model's call with words of its own and never calls the server (hostile twins).
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import {
  askModel, builtinsOf, checkpointMeta, clientFs, HISTORY, journal, JOURNAL_TEXT, JOURNAL_TURNS, readable, restore, resumedTurns,
  servers, setClientFs, sleep, startMcp, staged, structuredAnswer, STRUCTURED, text, twin, update,
} from "./mechanisms.mjs";

const M = acp.methods;
const sessions = new Map(); // sessionId -> { cwd, runtimeConfig }
const inFlight = new Map(); // sessionId -> the AbortController of its turn
const queued = new Map(); // sessionId -> the steers' contents, for its next prompt
const draining = new Set(); // sessionIds whose turn drains

const app = acp.agent({ name: "checkfu-probe-ts-agent" })
  .onRequest(M.agent.initialize, ({ params }) => {
    setClientFs(params?.clientCapabilities?.fs ?? {});
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "checkfu-probe-ts-agent", version: "1.0.0" },
      _meta: { "checkfu.capabilities": { subagents: "observed", steer: "native", interrupt: "cooperative",
        builtin_tool_scoping: "enforced", staged_files: "resource_links", native_checkpoint: "external_custody", ...(STRUCTURED ? { structured_output: STRUCTURED } : {}) } },
    };
  })
  .onRequest(M.agent.session.new, async ({ params }) => {
    const sessionId = `ts-${sessions.size + 1}`;
    const builtinTools = params._meta?.["checkfu.builtin_tools"];
    const outputSchema = params._meta?.["checkfu.output_schema"];
    // An output schema is authority: one this agent cannot hold to is refused, before any work.
    if (outputSchema !== undefined && (STRUCTURED !== "response_format" || !readable(outputSchema))) {
      throw acp.RequestError.invalidParams(undefined, "checkfu.output_schema is not supported here");
    }
    const resume = params._meta?.["checkfu.resume"];
    if (resume !== undefined) {
      const turns = resumedTurns(resume);
      if (turns === null) throw acp.RequestError.invalidParams(undefined, "checkfu.resume: the state is not one of this agent's checkpoints");
      if (!twin("--ignore-resume")) restore(turns);
    }
    const mcp = await startMcp(params.mcpServers, params.cwd);
    sessions.set(sessionId, { cwd: params.cwd, runtimeConfig: params._meta?.["checkfu.runtime_config"], builtinTools, outputSchema, mcp });
    return { sessionId };
  })
  .onRequest(M.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    if (session === undefined) throw acp.RequestError.sessionNotFound(sessionId);
    const { cwd, runtimeConfig, outputSchema } = session;
    const began = Date.now();
    const said = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ") + (await staged(params.prompt, sessionId, client));
    const turn = { calls: 0, retries: 0, overflowRecoveries: 0 };
    // The turn as it was: its model calls, retries and overflows compacted past, and the time it
    // took (the probe checks each against the relay's record).
    const telemetry = () => ({ "checkfu.turn": { execution: "shell", shell_commands: 0, filesystem_commands: 2, mcp_calls: 0,
      model_calls: twin("--lie-turn") ? 0 : turn.calls, model_transient_retries: turn.retries, model_overflow_recoveries: turn.overflowRecoveries,
      wall_time_ms: Date.now() - began } });
    const report = (claim) =>
      update(client, sessionId, { sessionUpdate: "session_info_update", updatedAt: new Date().toISOString(), _meta: { "checkfu.compaction": claim } });
    const abort = new AbortController();
    inFlight.set(sessionId, abort);
    draining.delete(sessionId);
    let answer;
    try {
      const steers = queued.get(sessionId) ?? [];
      queued.delete(sessionId);
      const builtins = builtinsOf(session, sessionId, client);
      answer = outputSchema === undefined
        ? await askModel(said, steers, runtimeConfig, turn, report, abort.signal, HISTORY, builtins)
        : await structuredAnswer(said, steers, runtimeConfig, turn, report, abort.signal, outputSchema, builtins);
    } catch (error) {
      if (abort.signal.aborted && twin("--call-after-cancel")) {
        // The cancel is answered, but the model is asked once more behind it.
        await askModel(said, [], runtimeConfig, turn, report, undefined).catch(() => null);
      }
      if (abort.signal.aborted) return { stopReason: "cancelled" };
      throw error;
    } finally {
      inFlight.delete(sessionId);
    }
    journal.push([said.slice(0, JOURNAL_TEXT), String(answer).slice(0, JOURNAL_TEXT)]);
    if (journal.length > JOURNAL_TURNS) journal.shift();
    await update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: text(answer), _meta: checkpointMeta() });
    // Drained: the answer in flight is out whole; no new work.
    if (draining.delete(sessionId)) return { stopReason: "cancelled", _meta: telemetry() };
    const sub = { "checkfu.subagent": { phase: "activity", subagent: "worker-1" } };
    await update(client, sessionId, {
      sessionUpdate: "session_info_update", updatedAt: new Date().toISOString(),
      _meta: { "checkfu.subagent": { phase: "started", subagent: "worker-1", name: "worker" } },
    });
    // The worker asks the model on its own and reports what it answered; the
    // `--narrate-subagent` twin reports words no model call gave it.
    const found = twin("--narrate-subagent")
      ? "I read the notes."
      : await askModel("You are the worker subagent: read the notes and report.", [], runtimeConfig, turn, report, undefined, 0);
    await update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: text(` (worker: ${found})`), _meta: sub });
    await update(client, sessionId, { sessionUpdate: "tool_call", toolCallId: "t-1", title: "Write notes", kind: "edit", status: "pending", _meta: sub });
    const permission = await client.request(M.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: "t-1", title: "Write notes", kind: "edit", status: "pending" },
      options: [
        { optionId: "yes", name: "Allow", kind: "allow_once" },
        { optionId: "no", name: "Reject", kind: "reject_once" },
      ],
    });
    if (permission.outcome.outcome === "selected" && permission.outcome.optionId === "yes" && clientFs.writeTextFile && clientFs.readTextFile) {
      await client.request(M.client.fs.writeTextFile, { sessionId, path: `${cwd}/notes.txt`, content: "from the TypeScript SDK\n" });
      await client.request(M.client.fs.readTextFile, { sessionId, path: `${cwd}/notes.txt` });
    }
    await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t-1", status: "completed", _meta: sub });
    await update(client, sessionId, {
      sessionUpdate: "session_info_update", updatedAt: new Date().toISOString(),
      _meta: { "checkfu.subagent": { phase: "completed", subagent: "worker-1", disposition: "completed" } },
    });
    // Mid-turn input (the probe's scripted steer) is acknowledged while the turn is live.
    await sleep(150);
    return { stopReason: "end_turn", _meta: telemetry() };
  })
  .onRequest("_checkfu/session/steer", (p) => p, ({ params }) => {
    if (!twin("--drop-steer")) queued.set(params.sessionId, [...(queued.get(params.sessionId) ?? []), params.content]);
    return { disposition: "queued" };
  })
  .onRequest("_checkfu/session/interrupt", (p) => p, ({ params }) => {
    // Only a turn with its model call still in flight has anything to drain.
    if (!inFlight.has(params.sessionId)) return { disposition: "refused" };
    draining.add(params.sessionId);
    // The twin says `draining` and cuts the answer off instead.
    if (twin("--truncate-drain")) setTimeout(() => inFlight.get(params.sessionId)?.abort(), 0);
    return { disposition: "draining" };
  })
  .onNotification(M.agent.session.cancel, ({ params }) => {
    if (!twin("--ignore-cancel")) inFlight.get(params.sessionId)?.abort();
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
for (const child of servers) child.kill();
