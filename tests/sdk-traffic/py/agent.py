"""ACP agent built with the Python SDK (agent-client-protocol, module `acp`).

Serves one client over stdio via acp.run_agent. What it does on session/prompt
depends on the first word of the prompt text, so one agent serves every scenario.
"""
from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp import schema as S

CWD = "/workspace/demo"
MODES = {
    "currentModeId": "ask",
    "availableModes": [
        {"id": "ask", "name": "Ask", "description": "Ask before every change"},
        {"id": "code", "name": "Code", "description": "Edit files freely"},
    ],
}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


class Agent:
    def __init__(self) -> None:
        self.conn: acp.AgentSideConnection | None = None  # set by on_connect
        self.sessions: dict[str, str] = {}
        self.next_session = 1
        self.model = "small"
        self.verbose = False

    def on_connect(self, conn) -> None:
        self.conn = conn

    def config_options(self) -> list[dict[str, Any]]:
        return [
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": self.model,
             "options": [{"value": "small", "name": "Small"}, {"value": "large", "name": "Large"}]},
            {"id": "verbose", "name": "Verbose", "type": "boolean", "currentValue": self.verbose},
        ]

    def require(self, session_id: str) -> None:
        if session_id not in self.sessions:
            raise acp.RequestError.resource_not_found(session_id)

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        n = S.SessionNotification.model_validate({"sessionId": session_id, "update": update})
        await self.conn.session_update(session_id=n.session_id, update=n.update)

    async def raw_update(self, session_id: str, update: dict[str, Any]) -> None:
        # The SDK's SessionNotification model (schema v1.19.0) has no variant for
        # `notice` / `compaction_*`, so these go through the SDK's own low-level
        # Connection with plain dict params.
        await self.conn._conn.send_notification("session/update", {"sessionId": session_id, "update": update})

    # -- agent-side methods -------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities=None, client_info=None, **kw):
        return S.InitializeResponse.model_validate({
            "protocolVersion": acp.PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": False},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
            },
            "authMethods": [{"id": "api-key", "name": "API key", "description": "Use a key from the environment"}],
            "agentInfo": {"name": "checkfu-sdk-traffic-agent", "title": "SDK traffic agent (Python)", "version": "0.0.0"},
        })

    async def authenticate(self, method_id: str, **kw):
        return S.AuthenticateResponse()

    async def new_session(self, cwd: str, additional_directories=None, mcp_servers=None, **kw):
        session_id = f"sess-{self.next_session}"
        self.next_session += 1
        self.sessions[session_id] = cwd
        return S.NewSessionResponse.model_validate(
            {"sessionId": session_id, "modes": MODES, "configOptions": self.config_options()})

    async def load_session(self, cwd: str, session_id: str, mcp_servers=None, additional_directories=None, **kw):
        self.require(session_id)
        await self.update(session_id, {"sessionUpdate": "user_message_chunk", "content": text("Bump the version.")})
        await self.update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text("On it.")})
        return S.LoadSessionResponse.model_validate({"modes": MODES, "configOptions": self.config_options()})

    async def list_sessions(self, cwd=None, cursor=None, **kw):
        return S.ListSessionsResponse.model_validate({"sessions": [
            {"sessionId": sid, "cwd": c, "updatedAt": "2025-01-01T00:00:00Z"} for sid, c in self.sessions.items()]})

    async def resume_session(self, session_id: str, cwd: str, additional_directories=None, mcp_servers=None, **kw):
        self.require(session_id)
        return S.ResumeSessionResponse.model_validate({"modes": MODES, "configOptions": self.config_options()})

    async def close_session(self, session_id: str, **kw):
        self.require(session_id)
        return S.CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kw):
        self.require(session_id)
        await self.update(session_id, {"sessionUpdate": "current_mode_update", "currentModeId": mode_id})
        return S.SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value, **kw):
        self.require(session_id)
        if config_id == "model":
            self.model = value
        elif config_id == "verbose":
            self.verbose = value
        else:
            raise acp.RequestError.invalid_params({"configId": config_id})
        return S.SetSessionConfigOptionResponse.model_validate({"configOptions": self.config_options()})

    async def cancel(self, session_id: str, **kw) -> None:
        pass  # the pending permission request is answered `cancelled` by the client

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass  # `_acme/progress` accepted and ignored; no ext_method, so extension requests get -32601

    async def prompt(self, session_id: str, prompt, **kw):
        self.require(session_id)
        first = next((b.text for b in prompt if getattr(b, "type", None) == "text"), "")
        word, _, arg = first.partition(" ")
        if word == "full":
            return await self.full_turn(session_id)
        if word == "cancel":
            return await self.cancel_turn(session_id)
        if word == "concurrent":
            return await self.concurrent_turn(session_id, arg)
        if word == "stop":
            await self.update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text(f"stopping with {arg}")})
            return S.PromptResponse(stop_reason=arg)
        await self.update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text("ok")})
        return S.PromptResponse(stop_reason="end_turn")

    # -- prompt turns ---------------------------------------------------------

    async def full_turn(self, sid: str):
        c = self.conn
        await self.update(sid, {"sessionUpdate": "agent_thought_chunk", "content": text("Reading the task.")})
        await self.update(sid, {"sessionUpdate": "plan", "entries": [
            {"content": "Read config.toml", "priority": "high", "status": "in_progress"},
            {"content": "Bump the version", "priority": "medium", "status": "pending"},
            {"content": "Run the tests", "priority": "low", "status": "pending"}]})
        await self.update(sid, {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "test", "description": "Run the test suite", "input": {"hint": "test filter"}},
            {"name": "plan", "description": "Show the plan"}]})
        await self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Edit config.toml",
                                "kind": "edit", "status": "pending",
                                "locations": [{"path": f"{CWD}/config.toml", "line": 1}],
                                "rawInput": {"path": f"{CWD}/config.toml"}})
        perm = await c.request_permission(
            session_id=sid,
            tool_call=S.ToolCallUpdate.model_validate({"toolCallId": "call-1", "title": "Edit config.toml", "kind": "edit", "status": "pending"}),
            options=[S.PermissionOption.model_validate(o) for o in [
                {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject once", "kind": "reject_once"},
                {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"}]])
        f = await c.read_text_file(session_id=sid, path=f"{CWD}/config.toml", line=1, limit=10)
        edited = f.content.replace("0.1.0", "0.2.0")
        await c.write_text_file(session_id=sid, path=f"{CWD}/config.toml", content=edited)
        await self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed",
                                "content": [
                                    {"type": "diff", "path": f"{CWD}/config.toml", "oldText": f.content, "newText": edited},
                                    {"type": "content", "content": text(f"permission: {perm.outcome.outcome}")}],
                                "rawOutput": {"written": True}})
        term = await c.create_terminal(session_id=sid, command="cargo", args=["test", "--quiet"], cwd=CWD,
                                       env=[S.EnvVariable(name="RUST_BACKTRACE", value="1")], output_byte_limit=4096)
        tid = term.terminal_id
        await self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": "call-2", "title": "cargo test", "kind": "execute",
                                "status": "in_progress", "content": [{"type": "terminal", "terminalId": tid}]})
        await c.terminal_output(session_id=sid, terminal_id=tid)
        await c.wait_for_terminal_exit(session_id=sid, terminal_id=tid)
        await c.kill_terminal(session_id=sid, terminal_id=tid)
        await c.release_terminal(session_id=sid, terminal_id=tid)
        await self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-2", "status": "completed",
                                "title": "cargo test (passed)"})
        form = await c.create_elicitation(
            message="Which release channel?",
            mode=S.ElicitationFormSessionMode.model_validate({
                "sessionId": sid, "toolCallId": "call-2",
                "requestedSchema": {"type": "object", "title": "Release", "properties": {
                    "channel": {"type": "string", "title": "Channel", "enum": ["stable", "beta"]},
                    "notes": {"type": "boolean", "title": "Write release notes", "default": False}},
                    "required": ["channel"]}}))
        await c.create_elicitation(
            message="Sign in to the registry",
            mode=S.ElicitationUrlSessionMode.model_validate({
                "sessionId": sid, "elicitationId": "elic-1", "url": "https://registry.example/login?state=fixed"}))
        await c.complete_elicitation(elicitation_id="elic-1")
        await self.update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": "code"})
        await self.update(sid, {"sessionUpdate": "config_option_update", "configOptions": self.config_options()})
        await self.update(sid, {"sessionUpdate": "session_info_update", "title": "Bump version", "updatedAt": "2025-01-01T00:00:00Z"})
        await self.update(sid, {"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": {"amount": 0.01, "currency": "USD"}})
        await self.raw_update(sid, {"sessionUpdate": "notice", "severity": "warning", "title": "Context is 80% full"})
        await self.raw_update(sid, {"sessionUpdate": "compaction_update", "compactionId": "cmp-1", "status": "in_progress"})
        await self.raw_update(sid, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "cmp-1", "content": text("Bumped version; tests pass.")})
        await self.raw_update(sid, {"sessionUpdate": "compaction_update", "compactionId": "cmp-1", "status": "completed", "summary": [text("Bumped version; tests pass.")]})
        await c.ext_notification("acme/progress", {"sessionId": sid, "percent": 90})
        try:
            await c.ext_method("acme/progress", {"sessionId": sid, "percent": 95})
        except acp.RequestError:
            pass  # -32601 expected
        channel = getattr(form, "content", None) or {}
        await self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": text(f"Done: channel {channel.get('channel')}.")})
        return S.PromptResponse.model_validate({"stopReason": "end_turn", "usage": {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200}})

    async def cancel_turn(self, sid: str):
        await self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": "call-9", "title": "Delete build/", "kind": "delete", "status": "pending"})
        perm = await self.conn.request_permission(
            session_id=sid,
            tool_call=S.ToolCallUpdate.model_validate({"toolCallId": "call-9", "title": "Delete build/", "kind": "delete"}),
            options=[S.PermissionOption.model_validate(o) for o in [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]])
        if perm.outcome.outcome == "cancelled":
            await self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-9", "status": "failed"})
            return S.PromptResponse(stop_reason="cancelled")
        return S.PromptResponse(stop_reason="end_turn")

    async def concurrent_turn(self, sid: str, tag: str):
        await self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": text(f"{tag}: starting")})
        await self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": f"{tag}-read", "title": f"Read {tag}.txt", "kind": "read", "status": "pending"})
        perm = await self.conn.request_permission(
            session_id=sid,
            tool_call=S.ToolCallUpdate.model_validate({"toolCallId": f"{tag}-read", "title": f"Read {tag}.txt"}),
            options=[S.PermissionOption.model_validate(o) for o in [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]])
        f = await self.conn.read_text_file(session_id=sid, path=f"{CWD}/{tag}.txt")
        await self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": f"{tag}-read", "status": "completed",
                                "content": [{"type": "content", "content": text(f.content)}]})
        await self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": text(f"{tag}: {perm.outcome.outcome}")})
        return S.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(Agent(), use_unstable_protocol=True))
