#!/usr/bin/env python3
"""Recording tee between an ACP client and the agent it spawns.

Usage: tee.py OUT_DIR NAME -- AGENT_COMMAND [ARGS...]

The client spawns this script instead of the agent. The script spawns the
agent, forwards every newline-delimited line in both directions unchanged,
and when both directions reach end of file writes, under OUT_DIR:

  NAME.interleaved.jsonl      every raw line in the order this tee read it
  NAME.client_to_agent.jsonl  raw lines read from our stdin (the client)
  NAME.agent_to_client.jsonl  raw lines read from the agent's stdout
  NAME.capture.jsonl          {"direction": ..., "message": <parsed line>}

Standard library only, so it runs with any Python 3.
"""
import json
import os
import subprocess
import sys
import threading


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 4 or args[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, name, command = args[0], args[1], args[3:]
    lines: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    agent = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

    def record(direction: str, line: bytes) -> None:
        with lock:
            lines.append((direction, line))

    def client_to_agent() -> None:
        src = sys.stdin.buffer
        while True:
            line = src.readline()
            if not line:
                break
            record("client_to_agent", line)
            try:
                agent.stdin.write(line)
                agent.stdin.flush()
            except BrokenPipeError:
                break
        try:
            agent.stdin.close()
        except OSError:
            pass

    forward = threading.Thread(target=client_to_agent, daemon=True)
    forward.start()

    out = sys.stdout.buffer
    while True:
        line = agent.stdout.readline()
        if not line:
            break
        record("agent_to_client", line)
        try:
            out.write(line)
            out.flush()
        except BrokenPipeError:
            pass
    code = agent.wait()
    forward.join(timeout=2.0)
    with lock:
        recorded = list(lines)
    write_files(out_dir, name, recorded)
    return code


def write_files(out_dir: str, name: str, recorded: list[tuple[str, bytes]]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, name)
    with open(base + ".interleaved.jsonl", "wb") as inter, \
            open(base + ".client_to_agent.jsonl", "wb") as c2a, \
            open(base + ".agent_to_client.jsonl", "wb") as a2c, \
            open(base + ".capture.jsonl", "w", encoding="utf-8") as cap:
        for direction, line in recorded:
            if not line.endswith(b"\n"):
                line += b"\n"
            inter.write(line)
            (c2a if direction == "client_to_agent" else a2c).write(line)
            message = json.loads(line)
            cap.write(json.dumps({"direction": direction, "message": message},
                                 ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    sys.exit(main())
