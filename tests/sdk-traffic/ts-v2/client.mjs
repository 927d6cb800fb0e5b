// ACP v2 client built with @agentclientprotocol/sdk's experimental v2 API
// (`@agentclientprotocol/sdk/experimental/v2`).
// Usage: node client.mjs OUT_DIR
// Spawns agent.mjs through ../tee.py, which records the wire traffic as ts-v2-turn.*.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const M = acp.methods;
const here = path.dirname(fileURLToPath(import.meta.url));
const [outDir] = process.argv.slice(2);
const CWD = "/workspace/demo";
const text = (t) => ({ type: "text", text: t });

// Resolves each session's next idle state_update with its stop reason.
const idle = new Map();
const nextIdle = (sessionId) => new Promise((r) => idle.set(sessionId, r));

const app = acp.client({ name: "checkfu-sdk-traffic-client-v2" })
  .onNotification(M.client.session.update, ({ params }) => {
    const u = params.update;
    if (u.sessionUpdate === "state_update" && u.state === "idle") idle.get(params.sessionId)?.(u.stopReason);
  });

async function scenario(ctx) {
  const init = await ctx.request(M.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: "checkfu-sdk-traffic-client-v2", title: "SDK traffic client (TypeScript, ACP v2)", version: "0.0.0" },
    capabilities: { auth: {}, elicitation: { form: {} } },
  });
  if (init.protocolVersion !== 2) throw new Error(`protocol version ${init.protocolVersion}`);
  const { sessionId } = await ctx.request(M.agent.session.new, { cwd: CWD, mcpServers: [] });
  // A turn that runs to its end.
  let done = nextIdle(sessionId);
  const receipt = await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("read the config")] });
  if (!receipt.messageId) throw new Error("no receipt");
  const first = await done;
  if (first !== "end_turn") throw new Error(`first turn ended ${first}`);
  // A turn the client cancels once it is running.
  done = nextIdle(sessionId);
  await ctx.request(M.agent.session.prompt, { sessionId, prompt: [text("wait for me")] });
  await ctx.notify(M.agent.session.cancel, { sessionId });
  const second = await done;
  if (second !== "cancelled") throw new Error(`second turn ended ${second}`);
}

const child = spawn("python3", [path.join(here, "tee.py"), outDir, "ts-v2-turn", "--", process.execPath, path.join(here, "agent.mjs")], {
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((r) => child.on("exit", r));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
await app.connectWith(stream, scenario);
child.stdin.end();
const code = await exited;
if (code !== 0) { console.error(`tee/agent exited with ${code}`); process.exit(1); }
