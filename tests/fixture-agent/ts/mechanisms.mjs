// What the probe's TypeScript fixture agents share, whichever ACP version they speak
// (agent.mjs, v1; agent-v2.mjs, v2): the model behind the probe's relay and its retries and
// compaction, the output-schema validator, the built-in tools under checkfu.builtin_tools, the
// granted MCP servers, the staged files' links and the journal checkpoint. install.sh copies it
// beside them. The hostile twins' flags are read here as there (`twin`).
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import * as acp from "@agentclientprotocol/sdk";

const M = acp.methods;
export const servers = []; // the MCP servers started, stopped when the client goes
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const text = (t) => ({ type: "text", text: t });
const historyAt = process.argv.indexOf("--history");
export const HISTORY = historyAt > 0 ? Number(process.argv[historyAt + 1]) || 0 : 0;
const ATTEMPTS = 6;
export const twin = (flag) => process.argv.includes(flag);
const structuredAt = process.argv.indexOf("--structured");
export const STRUCTURED = structuredAt > 0 ? process.argv[structuredAt + 1] : null;
// The turns of this process's sessions, and the ones a checkfu.resume handed back.
export const JOURNAL_TURNS = 8;
export const JOURNAL_TEXT = 4096;
export const journal = [];
let restored = [];
// The turns a `checkfu.resume` handed back: every model conversation opens with them.
export function restore(turns) {
  restored = turns;
}
// The checkpoint's _meta: the restored turns and this process's, the last few, hex-encoded JSON.
export function checkpointMeta() {
  if (twin("--no-checkpoint")) return {};
  const state = Buffer.from(JSON.stringify([...restored, ...journal].slice(-JOURNAL_TURNS)), "utf8").toString("hex");
  return { "checkfu.journal_checkpoint": { status: "checkpoint", version: 1, state } };
}
// The turns a checkfu.resume's state holds, or null when it is not one of this agent's.
export function resumedTurns(resume) {
  try {
    const turns = JSON.parse(Buffer.from(String(resume?.state ?? ""), "hex").toString("utf8"));
    const pair = (t) => Array.isArray(t) && t.length === 2 && t.every((x) => typeof x === "string");
    return Array.isArray(turns) && turns.every(pair) ? turns.slice(-JOURNAL_TURNS) : null;
  } catch {
    return null;
  }
}
const KNOWN = new Set(["type", "properties", "required", "additionalProperties", "enum", "const", "minimum", "maximum",
  "minLength", "maxLength", "items", "title", "description"]);

// Whether this validator reads every keyword of `schema` (so a pass means what it says).
export function readable(schema) {
  if (typeof schema === "boolean") return true;
  if (schema === null || typeof schema !== "object") return false;
  if (!Object.keys(schema).every((k) => KNOWN.has(k))) return false;
  if (typeof schema.additionalProperties === "object") return false;
  return Object.values(schema.properties ?? {}).every(readable) && (schema.items === undefined || readable(schema.items));
}

const typeOf = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);

// The ways `value` breaks `schema`, at most a few: empty when it validates.
function breaks(schema, value, at = "") {
  if (schema === true) return [];
  if (schema === false) return [`${at || "/"}: nothing is allowed`];
  const out = [];
  const types = schema.type === undefined ? null : [schema.type].flat();
  if (types && !types.some((t) => t === typeOf(value) || (t === "number" && typeof value === "number"))) {
    return [`${at || "/"}: ${JSON.stringify(value)} is not of type ${types.join(" or ")}`];
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) out.push(`${at || "/"}: not one of the enum`);
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) out.push(`${at || "/"}: not the const`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) out.push(`${at || "/"}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) out.push(`${at || "/"}: above ${schema.maximum}`);
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) out.push(`${at || "/"}: too short`);
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) out.push(`${at || "/"}: too long`);
  }
  if (typeOf(value) === "object") {
    for (const name of schema.required ?? []) if (!(name in value)) out.push(`${at || "/"}: ${name} is required`);
    for (const [name, member] of Object.entries(value)) {
      const sub = schema.properties?.[name];
      if (sub !== undefined) out.push(...breaks(sub, member, `${at}/${name}`));
      else if (schema.additionalProperties === false) out.push(`${at || "/"}: ${name} is not allowed`);
    }
  }
  if (Array.isArray(value) && schema.items !== undefined) value.forEach((item, i) => out.push(...breaks(schema.items, item, `${at}/${i}`)));
  return out.slice(0, 5);
}

export async function update(client, sessionId, u) {
  await client.notify(M.client.session.update, { sessionId, update: u });
}

// The relay's rule: the UTF-8 bytes of every string in the messages, four a token, rounded up.
function estimate(messages) {
  const bytes = (v) =>
    typeof v === "string" ? Buffer.byteLength(v, "utf8")
    : Array.isArray(v) ? v.reduce((n, x) => n + bytes(x), 0)
    : v !== null && typeof v === "object" ? Object.values(v).reduce((n, x) => n + bytes(x), 0)
    : 0;
  return Math.ceil(bytes(messages) / 4);
}

// Drops the oldest messages before the latest user message until the rest fits `window`,
// starting at a user message; null when even the latest user message does not fit.
function truncateOldest(messages, window) {
  const before = estimate(messages);
  const last = messages.map((m) => m.role).lastIndexOf("user");
  for (let from = 1; from <= last; from++) {
    if (messages[from].role === "user" && estimate(messages.slice(from)) <= window) {
      const kept = messages.slice(from);
      return { kept, claim: { strategy: "truncate_oldest", tokens_before: before, tokens_after: estimate(kept), compacted_messages: from } };
    }
  }
  return null;
}

const filler = "The notes from the earlier session list the files that were read, the commands that ran and what each one printed. ";
function earlierExchanges(count) {
  return Array.from({ length: count }, (_, k) => [
    { role: "user", content: `Earlier request ${k}: summarize the notes. ${filler.repeat(2)}` },
    { role: "assistant", content: `Earlier answer ${k}: ${filler.repeat(2)}` },
  ]).flat();
}

// A wait the turn's cancel can cut short.
function wait(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

// The model the probe's relay serves (OPENAI_BASE_URL and OPENAI_API_KEY are set by the
// probe), asked until it answers or the turn cannot go on: a transient fault is tried again
// after its retry-after, a context overflow compacted past under a policy. `turn` counts the
// calls the relay served (faults too), the retries and the overflows compacted past; `report`
// says each compaction; `before` are queued steers, sent before the prompt.
export async function askModel(said, before, runtimeConfig, turn, report, signal, history = HISTORY, builtins = null, structured = null) {
  const resumed = restored.flatMap(([words, said]) => [{ role: "user", content: words }, { role: "assistant", content: said }]);
  let messages = [...resumed, ...earlierExchanges(history), ...[...before, said].map((content) => ({ role: "user", content })), ...(structured?.follow ?? [])];
  const window = runtimeConfig?.context_window;
  const tools = builtins?.defs;
  let rounds = 0;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const response = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
      method: "POST",
      signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
      body: JSON.stringify({ model: "ts-fixture", messages, ...(tools ? { tools } : {}),
        ...(structured ? { response_format: { type: "json_schema", json_schema: { name: "output", schema: structured.schema } } } : {}) }),
    });
    turn.calls += 1;
    if (response.ok) {
      const answer = await response.json().catch(() => null);
      const message = answer?.choices?.[0]?.message;
      const call = message?.tool_calls?.[0];
      // A built-in tool call runs (or is refused) and its result goes back; a few rounds at most.
      if (call && builtins && rounds < 4) {
        rounds += 1;
        attempt = 0;
        messages = [...messages, message, { role: "tool", tool_call_id: call.id, content: await builtins.run(call.function.name, call.function.arguments) }];
        continue;
      }
      if (answer !== null) return message?.content ?? "(no answer)";
    }
    const body = response.ok ? "" : await response.text();
    if ([429, 500, 503, 529].includes(response.status) || response.ok) {
      // A transient fault, or an answer cut short: the same request again, after the wait.
      if (attempt === ATTEMPTS) break;
      turn.retries += 1;
      await wait(Number(response.headers.get("retry-after") ?? "0.1") * 1000, signal);
      continue;
    }
    const overflow = response.status === 400 && body.includes("context_length_exceeded");
    const compacted = overflow && runtimeConfig?.compaction && window ? truncateOldest(messages, window) : null;
    if (!compacted) return `(the model call was refused: ${response.status})`;
    messages = compacted.kept;
    turn.overflowRecoveries += 1;
    await report(compacted.claim);
  }
  return "(the model kept refusing)";
}

// The turn's final value under the session's output schema: asked for in `response_format`,
// validated, and a broken one sent back with a correction, a few times at most.
export async function structuredAnswer(said, before, runtimeConfig, turn, report, signal, schema, builtins) {
  const follow = [];
  for (let round = 0; round < 4; round++) {
    const answer = await askModel(said, before, runtimeConfig, turn, report, signal, HISTORY, builtins, { schema, follow });
    let value;
    try {
      value = JSON.parse(answer);
    } catch {
      value = undefined;
    }
    const broken = value === undefined ? ["not JSON"] : breaks(schema, value);
    if (broken.length === 0 || twin("--accept-invalid")) return answer;
    follow.push({ role: "assistant", content: answer }, { role: "user", content: `That answer breaks the output schema (${broken.join("; ")}). Answer again, following it.` });
  }
  return "(the model gave no value that follows the output schema)";
}

// The built-in tools, by the names of the contract's vocabulary for checkfu.builtin_tools.
const BUILTINS = {
  write: { description: "Writes a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } },
  bash: { description: "Runs a shell command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
};

// The session's built-in tools when it was handed a list (null otherwise: none are offered, as
// before): the ones the list admits are offered, and a call of any other is refused before it runs.
// The granted MCP servers' tools are offered beside them, list or not.
export function builtinsOf(session, sessionId, client) {
  if (session.builtinTools === undefined && session.mcp.size === 0) return null;
  const admitted = (name) => session.builtinTools?.includes(name) ?? false;
  const defs = [
    ...Object.keys(BUILTINS).filter(admitted).map((name) => ({ type: "function", function: { name, ...BUILTINS[name] } })),
    ...[...session.mcp].map(([name, tool]) => ({ type: "function", function: { name, description: "A tool of an MCP server", parameters: tool.inputSchema ?? { type: "object" } } })),
  ];
  return {
    defs,
    run: async (name, json) => {
      const mcp = session.mcp.get(name);
      if (mcp !== undefined) return callMcp(mcp, json);
      if (!admitted(name) && !twin("--run-outside-scope")) return `refused: \`${name}\` is not in this session's checkfu.builtin_tools`;
      const args = (() => { try { return JSON.parse(json ?? "{}"); } catch { return {}; } })();
      if (name === "write") {
        if (clientFs.writeTextFile) {
          await client.request(M.client.fs.writeTextFile, { sessionId, path: String(args.path), content: String(args.content) });
        } else {
          writeFileSync(String(args.path), String(args.content));
        }
        return "written";
      }
      try {
        execFileSync("sh", ["-c", String(args.command)], { cwd: session.cwd, timeout: 5000 });
        return "exit 0";
      } catch (error) {
        return `failed: ${error.status ?? error.message}`;
      }
    },
  };
}

// The stdio servers of `entries` (session/new's mcpServers), started in `cwd`, initialized and
// listed: their tools by the name the model is offered, each with its server's `request`.
export async function startMcp(entries, cwd) {
  const tools = new Map();
  if (twin("--ignore-mcp")) return tools;
  for (const entry of (entries ?? []).filter((e) => typeof e.command === "string").slice(0, 8)) {
    const env = { ...process.env, ...Object.fromEntries((entry.env ?? []).map((v) => [v.name, v.value])) };
    const child = spawn(entry.command, entry.args ?? [], { cwd, env, stdio: ["pipe", "pipe", "ignore"] });
    child.on("error", () => {});
    const pending = new Map();
    createInterface({ input: child.stdout }).on("line", (line) => {
      let message;
      try { message = JSON.parse(line); } catch { return; }
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    });
    let next = 0;
    const send = (message) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
    const request = (method, params) => new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => { pending.delete(id); reject(new Error(`${method}: no answer`)); }, 10000);
      pending.set(id, (m) => { clearTimeout(timer); if (m.error) reject(new Error(JSON.stringify(m.error))); else resolve(m.result); });
      send({ id, method, params });
    });
    servers.push(child);
    try {
      await request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "checkfu-probe-ts-agent", version: "1.0.0" } });
      send({ method: "notifications/initialized" });
      const listed = await request("tools/list", {});
      for (const tool of (listed?.tools ?? []).slice(0, 64)) {
        tools.set(`mcp__${entry.name}__${tool.name}`, { name: tool.name, inputSchema: tool.inputSchema, request });
      }
    } catch {
      child.kill();
    }
  }
  return tools;
}

// A call of an MCP server's tool: the text of its result (the twin's own words instead).
async function callMcp(tool, json) {
  if (twin("--narrate-mcp-call")) return "The tool ran and found nothing to report.";
  const args = (() => { try { return JSON.parse(json ?? "{}"); } catch { return {}; } })();
  try {
    const result = await tool.request("tools/call", { name: tool.name, arguments: args });
    return (result?.content ?? []).filter((c) => typeof c.text === "string").map((c) => c.text).join("\n");
  } catch (error) {
    return `the tool failed: ${error.message}`;
  }
}

// The prompt's resource links, read in order, as text after the prompt's words.
export async function staged(prompt, sessionId, client) {
  let text = "";
  if (twin("--ignore-staged")) return text;
  for (const block of prompt.filter((b) => b.type === "resource_link" && b.uri.startsWith("file://")).slice(0, 16)) {
    const path = decodeURIComponent(block.uri.slice("file://".length));
    const read = clientFs.readTextFile
      ? await client.request(M.client.fs.readTextFile, { sessionId, path }).catch(() => ({ content: "(unreadable)" }))
      : (() => { try { return { content: readFileSync(path, "utf8") }; } catch { return { content: "(unreadable)" }; } })();
    text += `\n[${path}]\n${read.content}`;
  }
  return text;
}

// What the client said it serves (`initialize`'s `clientCapabilities.fs`): the agent calls
// `fs/*` only when advertised, and works on its own files otherwise.
export let clientFs = {};
export function setClientFs(fs) {
  clientFs = fs;
}
