"""ACP client built with the Python SDK (agent-client-protocol, module `acp`).

Usage: python client.py SCENARIO OUT_DIR
Spawns the agent through tee.py (acp.spawn_agent_process), which records the
wire traffic as py-SCENARIO.*.
"""
from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import acp
from acp import schema as S

HERE = os.path.dirname(os.path.abspath(__file__))
CWD = "/workspace/demo"
FILES = {
    f"{CWD}/config.toml": 'version = "0.1.0"\nname = "demo"\n',
    f"{CWD}/a.txt": "alpha\n",
    f"{CWD}/b.txt": "beta\n",
}


def text(t: str) -> S.TextContentBlock:
    return S.TextContentBlock(type="text", text=t)


class Client:
    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.conn: acp.ClientSideConnection | None = None
        self.open_permissions: list[tuple[str, asyncio.Event]] = []
        self.both_open = asyncio.Event()

    def on_connect(self, conn) -> None:
        self.conn = conn

    async def request_permission(self, session_id: str, tool_call, options, **kw):
        tid = tool_call.tool_call_id
        if tid == "call-9":
            # The user cancels the turn while the agent waits for permission.
            await self.conn.cancel(session_id=session_id)
            return S.RequestPermissionResponse.model_validate({"outcome": {"outcome": "cancelled"}})
        if self.scenario == "concurrent":
            # Answer only once both requests are open, the second one first,
            # so the two responses cross on the wire.
            mine = asyncio.Event()
            self.open_permissions.append((tid, mine))
            if len(self.open_permissions) == 2:
                self.both_open.set()
            await self.both_open.wait()
            first, second = self.open_permissions
            if second[0] == tid:
                second[1].set()
                asyncio.get_running_loop().call_later(0.02, first[1].set)
            await mine.wait()
        return S.RequestPermissionResponse.model_validate({"outcome": {"outcome": "selected", "optionId": "allow"}})

    async def session_update(self, session_id: str, update, **kw) -> None:
        pass

    async def read_text_file(self, session_id: str, path: str, line=None, limit=None, **kw):
        if path not in FILES:
            raise acp.RequestError.resource_not_found(path)
        return S.ReadTextFileResponse(content=FILES[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kw):
        FILES[path] = content
        return S.WriteTextFileResponse()

    async def create_terminal(self, session_id: str, command: str, args=None, env=None, cwd=None, output_byte_limit=None, **kw):
        return S.CreateTerminalResponse(terminal_id="term-1")

    async def terminal_output(self, session_id: str, terminal_id: str, **kw):
        return S.TerminalOutputResponse.model_validate(
            {"output": "test result: ok. 3 passed\n", "truncated": False, "exitStatus": {"exitCode": 0}})

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kw):
        return S.WaitForTerminalExitResponse(exit_code=0)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kw):
        return S.KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kw):
        return S.ReleaseTerminalResponse()

    async def create_elicitation(self, message: str, mode, **kw):
        if isinstance(mode, (S.ElicitationFormSessionMode, S.ElicitationFormRequestMode)):
            return S.AcceptElicitationResponse.model_validate({"action": "accept", "content": {"channel": "beta", "notes": True}})
        return S.DeclineElicitationResponse.model_validate({"action": "decline"})

    async def complete_elicitation(self, elicitation_id: str, **kw) -> None:
        pass

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass  # no ext_method: the agent's `_acme/progress` request gets -32601


CLIENT_CAPS = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "elicitation": {"form": {}, "url": {}},
    "session": {"configOptions": {}, "notices": {}, "compaction": {}},
}


async def initialize(conn) -> None:
    init = await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=S.ClientCapabilities.model_validate(CLIENT_CAPS),
        client_info=S.Implementation(name="checkfu-sdk-traffic-client", title="SDK traffic client (Python)", version="0.0.0"),
    )
    if init.auth_methods:
        first = init.auth_methods[0]
        await conn.authenticate(method_id=getattr(first, "id", None) or first.root.id)


async def expect_error(coro, label: str) -> None:
    try:
        await coro
        print(f"{label}: unexpectedly succeeded", file=sys.stderr)
    except acp.RequestError:
        pass


async def lifecycle(conn) -> None:
    raw = conn._conn  # the SDK's low-level Connection, for what the typed API cannot send
    await initialize(conn)
    new = await conn.new_session(
        cwd=CWD, additional_directories=["/workspace/shared"],
        mcp_servers=[S.McpServerStdio.model_validate({"name": "files", "command": "/usr/bin/mcp-files",
                                                     "args": ["--root", CWD], "env": [{"name": "LOG", "value": "0"}]})])
    sid = new.session_id
    await conn.load_session(cwd=CWD, session_id=sid)
    await conn.set_session_mode(session_id=sid, mode_id="code")
    await conn.set_config_option(config_id="model", session_id=sid, value="large")
    await conn.set_config_option(config_id="verbose", session_id=sid, value=True)
    await conn.list_sessions(cwd=CWD)
    await conn.resume_session(session_id=sid, cwd=CWD)
    await conn.prompt(session_id=sid, prompt=[text("hello"), S.ResourceContentBlock(
        type="resource_link", uri=f"file://{CWD}/config.toml", name="config.toml")])
    # Errors.
    await expect_error(conn.load_session(cwd=CWD, session_id="sess-404"), "load unknown")
    await expect_error(conn.set_config_option(config_id="colour", session_id=sid, value="red"), "unknown config")
    await expect_error(conn.ext_method("acme/progress", {"percent": 10}), "unknown extension request")
    await conn.ext_notification("acme/progress", {"percent": 20})
    await conn.close_session(session_id=sid)
    # Stable methods this SDK has no typed API or agent route for: sent raw, answered -32601.
    await expect_error(raw.send_request("session/delete", {"sessionId": sid}), "session/delete")
    await expect_error(raw.send_request("logout", {}), "logout")


async def invalid(conn) -> None:
    """Deliberately malformed requests through the SDK's low-level Connection; the
    SDK agent answers -32602. These messages do NOT validate against the schema."""
    raw = conn._conn
    await initialize(conn)
    sid = (await conn.new_session(cwd=CWD)).session_id
    await expect_error(raw.send_request("session/set_mode", {"sessionId": sid}), "set_mode without modeId")
    await expect_error(raw.send_request("session/prompt", {"sessionId": sid, "prompt": "a string, not content blocks"}), "prompt as string")
    await expect_error(raw.send_request("session/new", [CWD]), "params as an array")


async def turn(conn) -> None:
    await initialize(conn)
    sid = (await conn.new_session(cwd=CWD)).session_id
    await conn.prompt(session_id=sid, prompt=[text("full turn please")])
    for reason in ("max_tokens", "max_turn_requests", "refusal"):
        await conn.prompt(session_id=sid, prompt=[text(f"stop {reason}")])
    await conn.prompt(session_id=sid, prompt=[text("cancel this turn")])


async def concurrent(conn) -> None:
    await initialize(conn)
    a = (await conn.new_session(cwd=CWD)).session_id
    b = (await conn.new_session(cwd=CWD)).session_id
    await asyncio.gather(
        conn.prompt(session_id=a, prompt=[text("concurrent a")]),
        conn.prompt(session_id=b, prompt=[text("concurrent b")]),
    )


SCENARIOS = {"lifecycle": lifecycle, "turn": turn, "concurrent": concurrent, "invalid": invalid}


async def main(scenario: str, out_dir: str) -> None:
    client = Client(scenario)
    tee = os.path.join(HERE, "tee.py")
    async with acp.spawn_agent_process(
        client, "python3", tee, out_dir, f"py-{scenario}", "--", sys.executable, os.path.join(HERE, "agent.py"),
        use_unstable_protocol=True,
    ) as (conn, process):
        await SCENARIOS[scenario](conn)
        process.stdin.close()
        await process.wait()


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    if name not in SCENARIOS:
        sys.exit(f"unknown scenario {name}; one of {', '.join(SCENARIOS)}")
    asyncio.run(main(name, out))
