// The probe's fixture agent written with the official TypeScript ACP SDK
// (@agentclientprotocol/sdk 2.4.0, installed by install.sh). It declares subagents and
// native steering in checkfu.capabilities, answers the prompt with what the model behind the
// probe's relay says (Node's own fetch, Chat Completions as plain JSON), runs one subagent with a tool call that asks permission and writes and reads
// a file in the session's cwd, acknowledges a steer through the SDK's extension-request
// handler, and ends the turn with checkfu.turn telemetry counted as it went. A transient fault
// (429, 500, 503, 529, or an answer cut short) is retried after its retry-after. A session/cancel
// aborts the model call in flight (fetch's AbortSignal) and the turn answers `cancelled`, as ACP
// asks. A steer is acknowledged `queued` and goes to the model with the next prompt, before it.
// It declares a cooperative interrupt: acknowledged `draining`, the model call in flight runs to
// its end, its answer is shown whole, and the turn stops there.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const M = acp.methods;
const sessions = new Map(); // sessionId -> cwd
const inFlight = new Map(); // sessionId -> the AbortController of its turn
const queued = new Map(); // sessionId -> the steers' contents, for its next prompt
const draining = new Set(); // sessionIds whose turn drains
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ type: "text", text: t });

async function update(client, sessionId, u) {
  await client.notify(M.client.session.update, { sessionId, update: u });
}

// The model the probe's relay serves: OPENAI_BASE_URL and OPENAI_API_KEY are set by the probe.
// Each call it served counts (faults too); a transient fault is tried again, up to 4 times.
async function askModel(said, signal, before, usage) {
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
      method: "POST",
      signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
      body: JSON.stringify({ model: "ts-fixture", messages: [...before, said].map((content) => ({ role: "user", content })) }),
    });
    usage.calls += 1;
    let answer = null;
    if (response.ok) answer = await response.json().catch(() => null);
    else await response.body?.cancel();
    const transient = [429, 500, 503, 529].includes(response.status) || (response.ok && answer === null);
    if (!transient || attempt === 4) {
      if (answer === null) return `(the model call failed: ${response.status})`;
      return answer.choices?.[0]?.message?.content ?? "(no answer)";
    }
    usage.retries += 1;
    const wait = Number(response.headers.get("retry-after") ?? "0.1") * 1000;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, wait);
      signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
    });
  }
}

const app = acp.agent({ name: "checkfu-probe-ts-agent" })
  .onRequest(M.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "checkfu-probe-ts-agent", version: "1.0.0" },
    _meta: { "checkfu.capabilities": { subagents: "observed", steer: "native", interrupt: "cooperative" } },
  }))
  .onRequest(M.agent.session.new, ({ params }) => {
    const sessionId = `ts-${sessions.size + 1}`;
    sessions.set(sessionId, params.cwd);
    return { sessionId };
  })
  .onRequest(M.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const cwd = sessions.get(sessionId);
    if (cwd === undefined) throw acp.RequestError.sessionNotFound(sessionId);
    const began = Date.now();
    const said = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ");
    const turn = new AbortController();
    inFlight.set(sessionId, turn);
    draining.delete(sessionId);
    const usage = { calls: 0, retries: 0 };
    const telemetry = () => ({ "checkfu.turn": { execution: "shell", shell_commands: 0, filesystem_commands: 2, mcp_calls: 0,
      model_calls: usage.calls, model_transient_retries: usage.retries, model_overflow_recoveries: 0, wall_time_ms: Date.now() - began } });
    let answer;
    try {
      const steers = queued.get(sessionId) ?? [];
      queued.delete(sessionId);
      answer = await askModel(said, turn.signal, steers, usage);
    } catch (error) {
      if (turn.signal.aborted) return { stopReason: "cancelled" };
      throw error;
    } finally {
      inFlight.delete(sessionId);
    }
    await update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: text(answer) });
    // Drained: the answer in flight is out whole; no new work.
    if (draining.delete(sessionId)) return { stopReason: "cancelled", _meta: telemetry() };
    const sub = { "checkfu.subagent": { phase: "activity", subagent: "worker-1" } };
    await update(client, sessionId, {
      sessionUpdate: "session_info_update", updatedAt: new Date().toISOString(),
      _meta: { "checkfu.subagent": { phase: "started", subagent: "worker-1", name: "worker" } },
    });
    await update(client, sessionId, { sessionUpdate: "tool_call", toolCallId: "t-1", title: "Write notes", kind: "edit", status: "pending", _meta: sub });
    const permission = await client.request(M.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: "t-1", title: "Write notes", kind: "edit", status: "pending" },
      options: [
        { optionId: "yes", name: "Allow", kind: "allow_once" },
        { optionId: "no", name: "Reject", kind: "reject_once" },
      ],
    });
    if (permission.outcome.outcome === "selected" && permission.outcome.optionId === "yes") {
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
    // The turn as it was: the model calls and retries counted, the time it took (the probe
    // checks them against the relay's record).
    return { stopReason: "end_turn", _meta: telemetry() };
  })
  .onRequest("_checkfu/session/steer", (p) => p, ({ params }) => {
    queued.set(params.sessionId, [...(queued.get(params.sessionId) ?? []), params.content]);
    return { disposition: "queued" };
  })
  .onRequest("_checkfu/session/interrupt", (p) => p, ({ params }) => {
    // Only a turn with its model call still in flight has anything to drain.
    if (!inFlight.has(params.sessionId)) return { disposition: "refused" };
    draining.add(params.sessionId);
    return { disposition: "draining" };
  })
  .onNotification(M.agent.session.cancel, ({ params }) => inFlight.get(params.sessionId)?.abort());

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
