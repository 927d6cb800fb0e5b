#!/usr/bin/env python3
"""A fixture one-shot CLI for the probe's oneshot-v1 tests (not a tool for users).

It takes one prompt (stdin, or --prompt-path FILE), asks the model through the relay the
probe points it at (ANTHROPIC_BASE_URL / OPENAI_BASE_URL, with the session's key), prints the
answer as text or as the normalized stream (--stream), keeps its sessions in $HOME so
--resume[=ID] continues one, and exits. Standard library only. CHECKFU_FIXTURE_MODE makes
it misbehave in the ways real CLIs were seen to:
  error-exit0   the model call is refused; the error message is printed as the answer, exit 0
  echo          no model call; the prompt is printed back, exit 0
  lost-resume   a resumed run sends only the new prompt (the first turn is lost)
  schema-break  the output schema is never sent; the plain answer is printed, exit 0
  hang          the model is asked, then the CLI (and a child it starts) sleeps forever
  stream-error  the stream reports an error event after the answer, exit 0
  no-terminal   the stream never ends its turn, exit 0
  leave-child   answers, then exits leaving a child that holds stdout open
CHECKFU_FIXTURE_RETRY makes it retry a model call's transient faults (429, 500, 503, 529, an
answer cut short): `after` waits the answer's retry-after (0.1 s without one), as a client
should; `early` retries at once (a hostile twin).
CHECKFU_FIXTURE_SEEN=FILE makes it write what it was started with into FILE, as JSON: its
PWD and OLDPWD (null when unset), its working directory, and every file in $HOME but its own
sessions ({"pwd", "oldpwd", "cwd", "home": {relative path: text}}).
"""
import json
import os
import sys
import urllib.error
import urllib.request
import uuid

MODE = os.environ.get("CHECKFU_FIXTURE_MODE", "good")


def parse(argv):
    opts = {"prompt_path": None, "resume": None, "schema": None, "stream": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--prompt-path":
            i += 1
            opts["prompt_path"] = argv[i]
        elif a.startswith("--resume="):
            opts["resume"] = a.split("=", 1)[1]
        elif a == "--resume":
            opts["resume"] = "latest"
        elif a == "--output-schema":
            i += 1
            opts["schema"] = argv[i]
        elif a == "--stream":
            opts["stream"] = True
        else:
            sys.exit(f"fixture: unknown argument {a!r}")
        i += 1
    return opts


def sessions_dir():
    d = os.path.join(os.environ["HOME"], ".fixture-oneshot")
    os.makedirs(d, exist_ok=True)
    return d


def load(resume):
    d = sessions_dir()
    if resume == "latest":
        try:
            resume = open(os.path.join(d, "latest")).read().strip()
        except FileNotFoundError:
            sys.exit("fixture: no session to resume")
    try:
        return resume, json.load(open(os.path.join(d, resume + ".json")))
    except FileNotFoundError:
        sys.exit(f"fixture: no session {resume}")


def save(sid, history):
    d = sessions_dir()
    json.dump(history, open(os.path.join(d, sid + ".json"), "w"))
    open(os.path.join(d, "latest"), "w").write(sid)


def report_seen(path):
    home = os.environ["HOME"]
    files = {}
    for root, dirs, names in os.walk(home):
        dirs[:] = [d for d in dirs if d != ".fixture-oneshot"]
        for name in names:
            full = os.path.join(root, name)
            files[os.path.relpath(full, home)] = open(full, encoding="utf-8", errors="replace").read()
    seen = {"pwd": os.environ.get("PWD"), "oldpwd": os.environ.get("OLDPWD"), "cwd": os.getcwd(), "home": files}
    with open(path, "w") as out:
        json.dump(seen, out)


RETRY = os.environ.get("CHECKFU_FIXTURE_RETRY")
TRANSIENT = (429, 500, 503, 529)


def post_once(url, body, key):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("content-type", "application/json")
    req.add_header("x-api-key", key)
    req.add_header("authorization", "Bearer " + key)
    req.add_header("anthropic-version", "2023-06-01")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def post(url, body, key):
    """One model call; under CHECKFU_FIXTURE_RETRY its transient faults are tried again."""
    import http.client
    import time
    for attempt in range(6):
        last = attempt == 5 or RETRY is None
        try:
            return post_once(url, body, key)
        except urllib.error.HTTPError as e:
            if last or e.code not in TRANSIENT:
                raise
            wait = float(e.headers.get("retry-after") or 0.1)
        except (ValueError, http.client.HTTPException, ConnectionError):
            # An answer cut short: its JSON never ends, or its chunks stop mid-way.
            if last:
                raise
            wait = 0.1
        if RETRY == "after":
            time.sleep(wait)


def ask(messages, schema):
    """The answer text: Anthropic Messages, or Responses with text.format for a schema."""
    if schema is not None and MODE != "schema-break":
        base = os.environ["OPENAI_BASE_URL"]
        body = {"model": "fixture", "input": [{"role": m["role"], "content": m["content"]} for m in messages],
                "text": {"format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}}}
        out = post(base + "/responses", body, os.environ["OPENAI_API_KEY"])
        return "".join(c.get("text", "") for item in out.get("output", []) if item.get("type") == "message"
                       for c in item.get("content", [])), out.get("usage", {})
    base = os.environ["ANTHROPIC_BASE_URL"]
    path = "/v1/nope" if MODE == "error-exit0" else "/v1/messages"
    out = post(base + path, {"model": "fixture", "max_tokens": 256, "messages": messages}, os.environ["ANTHROPIC_API_KEY"])
    text = "".join(b.get("text", "") for b in out.get("content", []) if b.get("type") == "text")
    return text, out.get("usage", {})


def emit(event):
    print(json.dumps(event), flush=True)


def main():
    opts = parse(sys.argv[1:])
    if os.environ.get("CHECKFU_FIXTURE_SEEN"):
        report_seen(os.environ["CHECKFU_FIXTURE_SEEN"])
    prompt = open(opts["prompt_path"]).read() if opts["prompt_path"] else sys.stdin.read()
    schema = json.load(open(opts["schema"])) if opts["schema"] else None
    if opts["resume"]:
        sid, history = load(opts["resume"])
        if MODE == "lost-resume":
            history = []
    else:
        sid, history = str(uuid.uuid4()), []
    if opts["stream"]:
        emit({"type": "session", "session_id": sid})
    if MODE == "echo":
        print(prompt)
        return 0
    messages = history + [{"role": "user", "content": prompt}]
    try:
        answer, usage = ask(messages, schema)
    except urllib.error.HTTPError as e:
        # What several CLIs do: the error becomes the answer, and the exit status says 0.
        answer, usage = f"API Error: {e.code} {e.read().decode(errors='replace')}", {}
        if MODE != "error-exit0":
            print(answer, file=sys.stderr)
            return 1
    if MODE == "hang":
        os.spawnlp(os.P_NOWAIT, "sleep", "sleep", "3600")
        import time
        time.sleep(3600)
    save(sid, messages + [{"role": "assistant", "content": answer}])
    if not opts["stream"]:
        print(answer, flush=True)
        if MODE == "leave-child":
            os.spawnlp(os.P_NOWAIT, "sleep", "sleep", "3600")
        return 0
    half = len(answer) // 2
    emit({"type": "text_delta", "text": answer[:half]})
    emit({"type": "text_delta", "text": answer[half:]})
    emit({"type": "text", "text": answer})
    emit({"type": "usage", "input_tokens": usage.get("input_tokens", 0), "output_tokens": usage.get("output_tokens", 0)})
    if MODE == "stream-error":
        emit({"type": "error", "message": "fixture: the turn failed after the answer"})
        return 0
    if MODE == "no-terminal":
        return 0
    emit({"type": "terminal", "stop_reason": "end_turn", "result": answer})
    return 0


if __name__ == "__main__":
    sys.exit(main())
