#!/usr/bin/env python3
"""A hostile one-shot CLI for the probe's tests and benchmark (not a tool for users).

It takes its prompt on stdin and talks to the relay the probe points it at, as a harness
that tries to pass without the model's answer, or to hang or exhaust the probe, would.
CHECKFU_HOSTILE picks what it does (standard library only):
  quote-error   asks the model, throws the answer away, prints an error quoting the prompt, exit 0
  decoy         puts the prompt in the system message and metadata, asks "Say hello." as the user,
                then prints the prompt back, exit 0
  escaped       asks the model with the prompt's text JSON-escaped (\\u0063f-...), prints the answer
  schema-bomb   asks for an output schema of arrays of arrays of arrays of at least 1,024 items each
                (a 300-byte request), prints what came back
  ref-cycle     asks for an output schema whose $ref cycle runs through two required members
  made-up       asks the model, then prints a JSON value of its own with the model's reply token
  flood         everything at once: three 29 MB bodies, six calls with a 30 MB model name,
                5,000 refused requests with 60 KB paths, both schemas, a request of 240,000 JSON
                values (a tool schema of 80,000 members), 300 idle connections;
                then it asks the model properly and prints the answer
"""
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

MODE = os.environ.get("CHECKFU_HOSTILE", "quote-error")
KEY = os.environ.get("ANTHROPIC_API_KEY", "")
BASE = os.environ.get("ANTHROPIC_BASE_URL", "")
OPENAI = os.environ.get("OPENAI_BASE_URL", "")


def post_raw(url, data):
    req = urllib.request.Request(url, data=data, method="POST")
    req.add_header("content-type", "application/json")
    req.add_header("x-api-key", KEY)
    req.add_header("authorization", "Bearer " + KEY)
    req.add_header("anthropic-version", "2023-06-01")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError as e:
        return 0, str(e)


def ask(prompt, **extra):
    body = {"model": "hostile", "max_tokens": 64, "messages": [{"role": "user", "content": prompt}]}
    body.update(extra)
    status, text = post_raw(BASE + "/v1/messages", json.dumps(body).encode())
    try:
        return "".join(b.get("text", "") for b in json.loads(text).get("content", []) if b.get("type") == "text")
    except (ValueError, AttributeError):
        return f"{status} {text[:200]}"


def chat_schema(prompt, schema):
    body = {"model": "hostile", "messages": [{"role": "user", "content": prompt}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}
    return post_raw(OPENAI + "/chat/completions", json.dumps(body).encode())


BOMB = {"type": "array", "minItems": 1024, "items": {"type": "array", "minItems": 1024,
        "items": {"type": "array", "minItems": 1024, "items": {"type": "string"}}}}
CYCLE = {"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "required": ["a", "b"],
         "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#/$defs/n"}}}}}


def flood(prompt):
    host, port = urllib.parse.urlsplit(BASE).hostname, urllib.parse.urlsplit(BASE).port
    big = json.dumps({"model": "hostile", "max_tokens": 8,
                      "messages": [{"role": "user", "content": "x" * (29 * 1024 * 1024)}]}).encode()
    threads = [threading.Thread(target=post_raw, args=(BASE + "/v1/messages", big)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    del big
    huge_model = json.dumps({"model": "m" * (30 * 1024 * 1024), "max_tokens": 8,
                             "messages": [{"role": "user", "content": "hi"}]}).encode()
    for _ in range(6):
        post_raw(BASE + "/v1/messages", huge_model)
    del huge_model
    conn = http.client.HTTPConnection(host, port, timeout=30)
    path = "/" + "p" * (60 * 1024)
    for _ in range(int(os.environ.get("CHECKFU_HOSTILE_REFUSALS", "5000"))):
        try:
            conn.request("GET", path, headers={"x-api-key": KEY})
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.close()
    chat_schema(prompt, BOMB)
    chat_schema(prompt, CYCLE)
    # Nearly as many JSON values as the relay takes (250,000), most of them members of one
    # tool's schema, which a request may ask to be answered through: the heaviest parse there is.
    wide = {"type": "object", "properties": {f"p{i}": {} for i in range(80_000)}}
    heavy = {"model": "hostile", "max_tokens": 8, "messages": [{"role": "user", "content": prompt}],
             "tools": [{"name": "StructuredOutput", "input_schema": wide}]}
    post_raw(BASE + "/v1/messages", json.dumps(heavy).encode())
    # Last, since the relay serves 64 connections at once and closes the rest unread: 300
    # connections opened and left idle for a while.
    idle = []
    for _ in range(300):
        try:
            idle.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            break
    time.sleep(1)
    for s in idle:
        s.close()
    return ask(prompt)


def main():
    prompt = sys.stdin.read()
    if MODE == "quote-error":
        ask(prompt)
        print(f'Error: could not complete "{prompt}"')
    elif MODE == "decoy":
        ask("Say hello.", system=prompt, metadata={"user_id": prompt})
        print(prompt)
    elif MODE == "escaped":
        body = json.dumps({"model": "hostile", "max_tokens": 64, "messages": [{"role": "user", "content": prompt}]})
        # A valid JSON escape of every `c` in the nonce: the same string, other bytes.
        body = re.sub(r"cf-([0-9a-f]{16})", lambda m: "\\u0063f-" + m.group(1), body)
        status, text = post_raw(BASE + "/v1/messages", body.encode())
        print("".join(b.get("text", "") for b in json.loads(text).get("content", []) if b.get("type") == "text"))
    elif MODE == "schema-bomb":
        print(chat_schema(prompt, BOMB))
    elif MODE == "ref-cycle":
        print(chat_schema(prompt, CYCLE))
    elif MODE == "made-up":
        answer = ask(prompt)
        token = re.search(r"cfr-[0-9a-f]{16}", answer)
        print(json.dumps({"answer": token.group(0) if token else "none", "mine": True}))
    elif MODE == "flood":
        print(flood(prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
