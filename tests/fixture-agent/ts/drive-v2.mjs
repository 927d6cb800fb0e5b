// A raw JSON-RPC client for agent-v2.mjs that records its wire, so the reference agent and its
// twins can be checked without the probe (`checkfu-wire decode --protocol acp-v2 OUT`).
// Raw, not the SDK's client: the SDK's client would refuse the twins' broken shapes before
// they could be recorded. Node's standard library only.
//
// Usage: node drive-v2.mjs AGENT_V2_MJS OUT_CAPTURE [AGENT_FLAG...]
//
// It serves a stand-in model on 127.0.0.1 (Chat Completions as plain JSON: the answer names
// a reply token; a prompt that says "hold" is answered only after HOLD_MS, long after the cancel
// the client sends once it is held), starts the agent
// with OPENAI_BASE_URL pointing at it, and runs: initialize (v2), session/new, one turn run to
// its end, one turn cancelled while its model call is held, session/list, session/resume,
// session/close. OUT_CAPTURE gets one `{"direction", "message"}` line per message, in the order
// this client sent or read them (the SDK traffic captures' format). Stdout gets one JSON
// summary: what each turn ended with, the model calls served, and the answer to a separate
// connection's v1 `initialize`. Every wait is bounded; the agent is killed on the way out.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [agentPath, out, ...flags] = process.argv.slice(2);
if (!agentPath || !out) {
  console.error("usage: node drive-v2.mjs AGENT_V2_MJS OUT_CAPTURE [AGENT_FLAG...]");
  process.exit(2);
}
const WAIT_MS = 5000;
const HOLD_MS = 1500;
const REPLY_TOKEN = "reply-token-7f3a";
const served = [];
const held = [];

// The stand-in model: each request counted, its answer the reply token; "hold" never answered.
const model = createServer((req, res) => {
  let body = "";
  req.on("data", (chunk) => { if (body.length < 1 << 20) body += chunk; });
  req.on("end", () => {
    served.push(body);
    const answer = () => {
      if (res.destroyed) return;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "c", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop",
        message: { role: "assistant", content: `The answer is ${REPLY_TOKEN}.` } }] }));
    };
    if (!body.includes("hold")) return answer();
    held.push(res);
    setTimeout(answer, HOLD_MS);
  });
});
await new Promise((r) => model.listen(0, "127.0.0.1", r));
const env = { ...process.env, OPENAI_BASE_URL: `http://127.0.0.1:${model.address().port}/v1`, OPENAI_API_KEY: "drive-v2" };

// One agent process and its wire: requests answered by id, every message seen by `watchers`.
function connect(record) {
  const agent = spawn(process.execPath, [agentPath, ...flags], { env, stdio: ["pipe", "pipe", "inherit"] });
  const pending = new Map();
  const watchers = new Set();
  let next = 0;
  createInterface({ input: agent.stdout }).on("line", (line) => {
    let message;
    try { message = JSON.parse(line); } catch { return; }
    record?.push({ direction: "agent_to_client", message });
    if (message.id !== undefined && !message.method) pending.get(message.id)?.(message);
    for (const watch of watchers) watch(message);
  });
  const send = (body) => {
    const message = { jsonrpc: "2.0", ...body };
    record?.push({ direction: "client_to_agent", message });
    agent.stdin.write(JSON.stringify(message) + "\n");
  };
  const request = (method, params) => {
    const id = next++;
    const answered = new Promise((resolve) => pending.set(id, resolve));
    send({ id, method, params });
    return within(answered, `${method}: no answer`);
  };
  // The first message `test` accepts, or a timeout's error.
  const until = (test, what) => {
    let watch;
    const seen = new Promise((resolve) => { watch = (m) => test(m) && resolve(m); watchers.add(watch); });
    return within(seen, what).finally(() => watchers.delete(watch));
  };
  return { agent, request, notify: (method, params) => send({ method, params }), until };
}

function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(what)), WAIT_MS); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const idleOf = (sessionId) => (m) => m.method === "session/update" && m.params?.sessionId === sessionId
  && m.params.update?.sessionUpdate === "state_update" && m.params.update.state === "idle";
const outcome = (p) => p.then((v) => v, (e) => ({ error: e.message }));

// A turn: the prompt's answer and the idle that ends it (or why neither came).
async function turn(wire, sessionId, words, cancel) {
  const idle = outcome(wire.until(idleOf(sessionId), "no idle state_update"));
  const answer = outcome(wire.request("session/prompt", { sessionId, prompt: [{ type: "text", text: words }] }));
  if (cancel) {
    // Cancelled once the model call is held (the agent is mid-turn).
    await within((async () => { while (held.length === 0) await new Promise((r) => setTimeout(r, 10)); })(), "the model was never asked");
    wire.notify("session/cancel", { sessionId });
  }
  const result = await answer;
  return { result: result.result ?? result.error ?? null, idle: (await idle).params?.update ?? null };
}

const record = [];
const summary = { flags };
const wire = connect(record);
try {
  const init = await wire.request("initialize", { protocolVersion: 2, info: { name: "drive-v2", version: "1.0.0" }, capabilities: {} });
  summary.initialize = init.result ?? init.error;
  const { result: { sessionId } } = await wire.request("session/new", { cwd: process.cwd(), mcpServers: [] });
  summary.turn = await turn(wire, sessionId, `Answer with the reply token.`, false);
  summary.cancelled = await turn(wire, sessionId, `hold the answer until cancelled`, true);
  summary.list = (await wire.request("session/list", {})).result ?? null;
  summary.resume = (await wire.request("session/resume", { sessionId, cwd: process.cwd() })).result ?? null;
  summary.close = (await wire.request("session/close", { sessionId })).result ?? null;
} catch (error) {
  summary.error = error.message;
} finally {
  wire.agent.kill();
}
// A v1 client on a connection of its own: the SDK refuses it with -32022 and its versions.
const v1 = connect(null);
try {
  const answer = await v1.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  summary.v1Initialize = answer.error ?? answer.result;
} catch (error) {
  summary.v1Initialize = { error: error.message };
} finally {
  v1.agent.kill();
}
for (const res of held) res.destroy();
model.close();
summary.modelCalls = served.length;
summary.replyToken = REPLY_TOKEN;
writeFileSync(out, record.map((r) => JSON.stringify(r)).join("\n") + "\n");
console.log(JSON.stringify(summary));
