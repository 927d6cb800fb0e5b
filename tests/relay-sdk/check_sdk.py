#!/usr/bin/env python3
"""Checks the probe's model relay with the official Python SDKs (`anthropic`, `openai`).

Usage:
  check_sdk.py --base-url URL --api-key KEY --nonce NONCE --token TOKEN \
               --workspace DIR --script nonce|tool|faults|fault-shapes [--only DIALECT] [--model NAME]
  check_sdk.py --fault-shapes-script     prints the model script `fault-shapes` expects

URL is the relay's root, e.g. http://127.0.0.1:PORT (no path, as `{relay_url}`); the Anthropic
client is given URL and the OpenAI clients URL/v1, which is where each SDK expects its base.

For each dialect (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses) and each of
plain JSON and streaming (through the SDK's own stream helper, never by parsing SSE here):
  nonce: one user turn carrying NONCE; the reply's text must contain NONCE.
  tool:  the same turn offering one tool, `read_file`; the reply must be a call to it whose
         `path` names a file inside DIR; that file is read (it must hold TOKEN) and sent back as
         the dialect's tool result; the second reply's text must contain NONCE.
Every answer is also walked against the SDK's own response model (`walk_model`): each field
the model defines, recursively through nested models and lists, must be present in what the
relay sent (a null where the provider sends null), and a token count inside a usage model must
be a number, never null. JSON answers are walked as returned; a stream is requested once more
with the SDK's raw `create(stream=True)` and every event is walked as parsed. Text and tool
answers both (the `tool` script gives a tool answer, then a text one).
Then, per dialect, a call with no credentials and one with a wrong key must each raise the
SDK's AuthenticationError (HTTP 401) with an error body in the dialect's own shape.

Faults (the relay's `fault` script entries and its built-in `faults` script):
  fault-shapes: the relay plays the script `--fault-shapes-script` prints, a block of
         FAULT_BLOCK per dialect and mode. Each fault is met once by a client that does not
         retry (max_retries=0), which must raise the SDK's own class for it (RateLimitError with
         the `retry-after` header, OverloadedError or InternalServerError, BadRequestError with
         the context-length code or message, a connection error for a cut), and once by a client
         that retries (max_retries=2), which must retry each transient fault and then return the
         answer that follows it. A context overflow must not be retried. A stream cut mid-stream
         is not retried by either SDK (the answer had begun): the caller's own retry then gets
         the answer.
  faults: the built-in script, through one dialect (`--only`): four calls by a client that
         retries, each of which must end in an answer carrying the nonce.

`check_sdk.py --self-test` checks the walk itself on models built here.

Prints one JSON summary line on stdout and exits 1 if any check failed (each failure names the
dialect, the mode and what was wrong), 2 on bad arguments.
"""

import argparse
import json
import os
import sys
import traceback

import pydantic

try:
    import anthropic
    import openai
except ImportError as missing:  # the SDKs are installed by .ci/run from requirements.txt
    print(json.dumps({"ok": False, "error": f"cannot import the SDKs: {missing}; "
                      "pip install -r tests/relay-sdk/requirements.txt"}))
    sys.exit(1)

TOOL_NAME = "read_file"
TOOL_DESCRIPTION = "Reads a UTF-8 text file and returns its content."
TOOL_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}
TIMEOUT_S = 30.0
MAX_TOKENS = 256


class CheckFailed(Exception):
    """A check whose outcome contradicts what the relay promises."""


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def prompt_text(args):
    return f"Answer with the nonce {args.nonce}."


def read_tool_target(args, path):
    """The content of the file a tool call names, after checking it lies inside the workspace."""
    expect(isinstance(path, str) and path != "", f"the tool call's path is not a non-empty string: {path!r}")
    root = os.path.realpath(args.workspace)
    target = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
    expect(os.path.commonpath([root, target]) == root, f"the tool call's path {path!r} is outside the workspace {root}")
    expect(os.path.isfile(target), f"the tool call's path {path!r} names no file ({target})")
    with open(target, encoding="utf-8") as handle:
        content = handle.read()
    expect(args.token in content, f"{target} does not hold the token {args.token!r}")
    return content


def counts_tokens(model_class):
    """A usage model (Anthropic's Usage, MessageDeltaUsage, CacheCreation, ServerToolUsage,
    OpenAI's CompletionUsage, ResponseUsage and their *TokensDetails): its integers are counts,
    which a provider sends as 0 when there is nothing to count. A client that sums them (a
    context meter) breaks on null."""
    name = model_class.__name__
    return "Usage" in name or "TokensDetails" in name or name == "CacheCreation"


def integer_annotation(annotation):
    if annotation is int:
        return True
    return int in getattr(annotation, "__args__", ()) and all(a in (int, type(None)) for a in annotation.__args__)


def walk_model(value, path, problems):
    """Appends to `problems` every field of an SDK response model (and of the models inside
    it) that the relay left unset: absent from the wire, so the SDK filled in its default.
    The SDKs build their models with `construct`, which records in `model_fields_set` exactly
    the keys the wire carried."""
    if isinstance(value, pydantic.BaseModel):
        model_class = type(value)
        for name, field in model_class.model_fields.items():
            key = field.alias or name
            where = f"{path}.{key}"
            if name not in value.model_fields_set:
                problems.append(f"{where} ({model_class.__name__}) is left unset")
                continue
            child = getattr(value, name)
            if child is None and counts_tokens(model_class) and integer_annotation(field.annotation):
                problems.append(f"{where} ({model_class.__name__}) is null; a count is 0")
            walk_model(child, where, problems)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            walk_model(item, f"{path}[{index}]", problems)
    elif isinstance(value, dict):
        for key, item in value.items():
            walk_model(item, f"{path}.{key}", problems)


def walk_answer(args, answer, where):
    walk_model(answer, f"{where} {type(answer).__name__}", args.problems)


def walk_raw_stream(args, events, where):
    """Walks every event of a raw SDK stream (`create(stream=True)`), as the SDK parsed it."""
    count = 0
    for event in events:
        walk_model(event, f"{where} event {count} {type(event).__name__}", args.problems)
        count += 1
    expect(count > 0, f"{where}: the raw stream had no events")


def expect_nonce(text, args, where):
    expect(isinstance(text, str) and args.nonce in text, f"{where}: reply text {text!r} lacks the nonce {args.nonce!r}")


def tool_arguments(raw, where):
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as error:
        raise CheckFailed(f"{where}: tool call arguments are not JSON ({error}): {raw!r}")
    expect(isinstance(value, dict), f"{where}: tool call arguments are not an object: {raw!r}")
    return value


# ---------------------------------------------------------------- Anthropic Messages

def anthropic_client(args, api_key, max_retries=0):
    return anthropic.Anthropic(base_url=args.anthropic_base, api_key=api_key, max_retries=max_retries, timeout=TIMEOUT_S)


def anthropic_turn(client, args, stream, **params):
    """One Messages call; returns the final Message. Streaming goes through messages.stream and
    also checks that the streamed text deltas add up to the final text."""
    params = dict(model=args.model, max_tokens=MAX_TOKENS, **params)
    if not stream:
        message = client.messages.create(**params)
        walk_answer(args, message, "JSON")
        return message
    walk_raw_stream(args, client.messages.create(stream=True, **params), "stream")
    with client.messages.stream(**params) as events:
        streamed = "".join(events.text_stream)
        message = events.get_final_message()
    final = "".join(block.text for block in message.content if block.type == "text")
    expect(streamed == final, f"streamed text deltas {streamed!r} differ from the final message text {final!r}")
    return message


def anthropic_text(message):
    return "".join(block.text for block in message.content if block.type == "text")


def check_anthropic(args, stream):
    client = anthropic_client(args, args.api_key)
    user = {"role": "user", "content": prompt_text(args)}
    if args.script == "nonce":
        expect_nonce(anthropic_text(anthropic_turn(client, args, stream, messages=[user])), args, "reply")
        return
    tools = [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": TOOL_SCHEMA}]
    first = anthropic_turn(client, args, stream, messages=[user], tools=tools)
    calls = [block for block in first.content if block.type == "tool_use"]
    expect(first.stop_reason == "tool_use", f"first reply: stop_reason {first.stop_reason!r}, expected 'tool_use'")
    expect(len(calls) == 1 and calls[0].name == TOOL_NAME, f"first reply: expected one tool_use of {TOOL_NAME}, got {[(c.name, c.input) for c in calls]}")
    content = read_tool_target(args, tool_arguments(calls[0].input, "first reply").get("path"))
    messages = [
        user,
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": calls[0].id, "content": content}]},
    ]
    second = anthropic_turn(client, args, stream, messages=messages, tools=tools)
    expect_nonce(anthropic_text(second), args, "second reply")


def anthropic_call(client, args):
    client.messages.create(model=args.model, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": prompt_text(args)}],
                           extra_headers={"Authorization": anthropic.Omit(), "X-Api-Key": anthropic.Omit()} if client.api_key is None else None)


def anthropic_error_shape(body):
    # {"type": "error", "error": {"type": "authentication_error", "message": "..."}}
    return isinstance(body, dict) and body.get("type") == "error" and isinstance(body.get("error"), dict) \
        and isinstance(body["error"].get("type"), str) and isinstance(body["error"].get("message"), str)


# ---------------------------------------------------------------- OpenAI Chat Completions

def openai_client(args, api_key, max_retries=0):
    return openai.OpenAI(base_url=args.openai_base, api_key=api_key, max_retries=max_retries, timeout=TIMEOUT_S)


def chat_turn(client, args, stream, **params):
    """One Chat Completions call; returns the final ChatCompletion. Streaming goes through
    chat.completions.stream (which runs create(stream=True) and accumulates the chunks) and
    checks that the content deltas add up to the final content."""
    params = dict(model=args.model, **params)
    if not stream:
        completion = client.chat.completions.create(**params)
        walk_answer(args, completion, "JSON")
        return completion
    # As OpenAI's own clients ask for it; the usage then comes in a last chunk of its own.
    params["stream_options"] = {"include_usage": True}
    walk_raw_stream(args, client.chat.completions.create(stream=True, **params), "stream")
    streamed = []
    with client.chat.completions.stream(**params) as events:
        for event in events:
            if event.type == "content.delta":
                streamed.append(event.delta)
        completion = events.get_final_completion()
    final = completion.choices[0].message.content or ""
    expect("".join(streamed) == final, f"streamed content deltas {''.join(streamed)!r} differ from the final content {final!r}")
    return completion


def check_chat(args, stream):
    client = openai_client(args, args.api_key)
    user = {"role": "user", "content": prompt_text(args)}
    if args.script == "nonce":
        completion = chat_turn(client, args, stream, messages=[user])
        expect(len(completion.choices) >= 1, "reply has no choices")
        expect_nonce(completion.choices[0].message.content, args, "reply")
        return
    tools = [{"type": "function", "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": TOOL_SCHEMA}}]
    first = chat_turn(client, args, stream, messages=[user], tools=tools)
    expect(len(first.choices) >= 1, "first reply has no choices")
    choice = first.choices[0]
    calls = choice.message.tool_calls or []
    expect(choice.finish_reason == "tool_calls", f"first reply: finish_reason {choice.finish_reason!r}, expected 'tool_calls'")
    expect(len(calls) == 1 and calls[0].function.name == TOOL_NAME, f"first reply: expected one call of {TOOL_NAME}, got {[(c.function.name, c.function.arguments) for c in calls]}")
    call = calls[0]
    content = read_tool_target(args, tool_arguments(call.function.arguments, "first reply").get("path"))
    messages = [
        user,
        {"role": "assistant", "content": choice.message.content,
         "tool_calls": [{"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": content},
    ]
    second = chat_turn(client, args, stream, messages=messages, tools=tools)
    expect(len(second.choices) >= 1, "second reply has no choices")
    expect_nonce(second.choices[0].message.content, args, "second reply")


def chat_call(client, args):
    client.chat.completions.create(model=args.model, messages=[{"role": "user", "content": prompt_text(args)}],
                                   extra_headers={"Authorization": openai.Omit()} if client.api_key is None else None)


def openai_error_shape(body):
    # The SDK hands over the inner object of {"error": {"message": "...", "type": "...", ...}}.
    return isinstance(body, dict) and isinstance(body.get("message"), str)


# ---------------------------------------------------------------- OpenAI Responses

def responses_turn(client, args, stream, **params):
    """One Responses call; returns the final Response. Streaming goes through responses.stream
    (which runs create(stream=True) and checks the event sequence as it accumulates) and checks
    that the output_text deltas add up to the final output_text."""
    params = dict(model=args.model, **params)
    if not stream:
        response = client.responses.create(**params)
        walk_answer(args, response, "JSON")
        return response
    walk_raw_stream(args, client.responses.create(stream=True, **params), "stream")
    streamed = []
    with client.responses.stream(**params) as events:
        for event in events:
            if event.type == "response.output_text.delta":
                streamed.append(event.delta)
        response = events.get_final_response()
    expect("".join(streamed) == response.output_text, f"streamed output_text deltas {''.join(streamed)!r} differ from the final output_text {response.output_text!r}")
    return response


def check_responses(args, stream):
    client = openai_client(args, args.api_key)
    user = {"role": "user", "content": prompt_text(args)}
    if args.script == "nonce":
        expect_nonce(responses_turn(client, args, stream, input=[user]).output_text, args, "reply")
        return
    tools = [{"type": "function", "name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": TOOL_SCHEMA, "strict": False}]
    first = responses_turn(client, args, stream, input=[user], tools=tools)
    calls = [item for item in first.output if item.type == "function_call"]
    expect(len(calls) == 1 and calls[0].name == TOOL_NAME, f"first reply: expected one function_call of {TOOL_NAME}, got {[(c.name, c.arguments) for c in calls]}")
    call = calls[0]
    content = read_tool_target(args, tool_arguments(call.arguments, "first reply").get("path"))
    # Stateless, as codex sends it (store: false): the whole conversation goes back as input.
    conversation = [
        user,
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": content},
    ]
    second = responses_turn(client, args, stream, input=conversation, tools=tools)
    expect_nonce(second.output_text, args, "second reply")


def responses_call(client, args):
    client.responses.create(model=args.model, input=prompt_text(args),
                            extra_headers={"Authorization": openai.Omit()} if client.api_key is None else None)


# ---------------------------------------------------------------- faults

def anthropic_answer(client, args, stream):
    params = dict(model=args.model, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": prompt_text(args)}])
    if not stream:
        return anthropic_text(client.messages.create(**params))
    with client.messages.stream(**params) as events:
        return "".join(events.text_stream)


def chat_answer(client, args, stream):
    params = dict(model=args.model, messages=[{"role": "user", "content": prompt_text(args)}])
    if not stream:
        return client.chat.completions.create(**params).choices[0].message.content
    with client.chat.completions.stream(**params) as events:
        for _ in events:
            pass
        return events.get_final_completion().choices[0].message.content


def responses_answer(client, args, stream):
    params = dict(model=args.model, input=prompt_text(args))
    if not stream:
        return client.responses.create(**params).output_text
    with client.responses.stream(**params) as events:
        for _ in events:
            pass
        return events.get_final_response().output_text


ANSWER = {"text": "The nonce is {nonce}. The reply token is {reply_token}."}
OVERFLOW = {"fault": "context_overflow", "tokens": 250000, "maximum": 200000}
# One block per dialect and mode: (what is checked, the entries the relay plays for it).
FAULT_BLOCK = [
    ("raise rate_limit", [{"fault": "rate_limit", "retry_after": 1}]),
    ("raise overloaded", [{"fault": "overloaded"}]),
    ("raise server_error", [{"fault": "server_error"}]),
    ("raise context_overflow", [OVERFLOW]),
    ("raise stream_cut", [{"fault": "stream_cut", "after_events": 2}]),
    ("retry rate_limit", [{"fault": "rate_limit", "retry_after": 1}, ANSWER]),
    ("retry overloaded", [{"fault": "overloaded"}, ANSWER]),
    ("retry server_error", [{"fault": "server_error"}, ANSWER]),
    ("retry stream_cut", [{"fault": "stream_cut", "after_events": 2}, ANSWER]),
    ("retry context_overflow", [OVERFLOW, ANSWER]),
]


def fault_shapes_script():
    entries = []
    for _dialect in DIALECTS:
        for _stream in (False, True):
            for _, block in FAULT_BLOCK:
                entries.extend(block)
    return entries


def error_class(error):
    """The SDK's class for an error, or the transport's (module and name) when the SDK let it
    through unwrapped, as the Anthropic SDK does for a stream that breaks mid-way."""
    kind = type(error)
    return kind.__name__ if kind.__module__.split(".")[0] in ("anthropic", "openai") else f"{kind.__module__}.{kind.__name__}"


def expected_raise(sdk, dialect, fault, stream, error):
    """Whether `error` is the SDK's own class for `fault`, with the shape the provider sends."""
    if fault == "stream_cut":
        # A cut before the answer began (a JSON answer read whole) is a connection error; one
        # mid-stream is what the SDK's stream reader raises: the connection error (openai) or
        # the transport's RemoteProtocolError, which the Anthropic SDK lets through.
        return isinstance(error, sdk.APIConnectionError) or type(error).__name__ == "RemoteProtocolError"
    if not isinstance(error, sdk.APIStatusError):
        return False
    anthropic_side = dialect == "anthropic_messages"
    if fault == "rate_limit":
        return isinstance(error, sdk.RateLimitError) and error.status_code == 429 and error.response.headers.get("retry-after") == "1"
    if fault == "overloaded":
        if anthropic_side:
            return isinstance(error, sdk.OverloadedError) and error.status_code == 529 and error.body["error"]["type"] == "overloaded_error"
        return isinstance(error, sdk.InternalServerError) and error.status_code == 503
    if fault == "server_error":
        return type(error) is sdk.InternalServerError and error.status_code == 500
    if anthropic_side:
        message = error.body["error"]["message"]
        return isinstance(error, sdk.BadRequestError) and message == "prompt is too long: 250000 tokens > 200000 maximum"
    return isinstance(error, sdk.BadRequestError) and error.code == "context_length_exceeded"


def check_fault_case(args, dialect, sdk, make_client, answer, stream, case):
    """One case of FAULT_BLOCK; returns the SDK's class for the fault (raise) or whether the SDK
    itself retried it (retry)."""
    action, fault = case.split(" ")
    if action == "raise":
        try:
            answer(make_client(args, args.api_key, 0), args, stream)
        except Exception as error:
            expect(expected_raise(sdk, dialect, fault, stream, error), f"{fault}: not the SDK's class or shape: {describe(error)}")
            return error_class(error)
        raise CheckFailed(f"{fault}: the call succeeded; expected an error")
    client = make_client(args, args.api_key, 2)
    if fault == "context_overflow":
        try:
            answer(client, args, stream)
            raise CheckFailed("context_overflow: the call succeeded, so the SDK retried a 400")
        except sdk.BadRequestError:
            pass
        expect_nonce(answer(client, args, stream), args, "the answer after the overflow")
        return False
    try:
        expect_nonce(answer(client, args, stream), args, f"{fault}: the answer after the retry")
        return True
    except Exception as error:
        expect(fault == "stream_cut" and stream, f"{fault}: the SDK did not retry to the answer: {describe(error)}")
    # A stream that broke mid-way is not retried by the SDK; the caller retries, as a harness does.
    expect_nonce(answer(client, args, stream), args, "stream_cut: the caller's retry")
    return False


def check_fault_shapes(args):
    results = []
    for dialect, _check, sdk, make_client, _call, _shape in DIALECTS:
        answer = FAULT_ANSWERS[dialect]
        for stream in (False, True):
            entry = {"dialect": dialect, "stream": stream, "raised": {}, "sdk_retried": {}}
            try:
                for case, _ in FAULT_BLOCK:
                    outcome = check_fault_case(args, dialect, sdk, make_client, answer, stream, case)
                    action, fault = case.split(" ")
                    entry["raised" if action == "raise" else "sdk_retried"][fault] = outcome
                entry["ok"] = True
            except Exception as error:
                entry.update(ok=False, error=describe(error))
            results.append(entry)
    return results


def check_builtin_faults(args):
    """The built-in `faults` script through one dialect: each call meets one transient fault,
    which the SDK retries, and ends in the answer that follows it."""
    results = []
    for dialect, _check, sdk, make_client, _call, _shape in DIALECTS:
        if dialect != args.only:
            continue
        client = make_client(args, args.api_key, 2)
        for index, fault in enumerate(["rate_limit", "overloaded", "server_error", "stream_cut"]):
            entry = {"dialect": dialect, "stream": False, "call": index + 1, "fault": fault}
            try:
                expect_nonce(FAULT_ANSWERS[dialect](client, args, False), args, f"{fault}: the answer after the retry")
                entry["ok"] = True
            except Exception as error:
                entry.update(ok=False, error=describe(error))
            results.append(entry)
    return results


# ---------------------------------------------------------------- driver

DIALECTS = [
    # name, turn check, SDK module, client maker, one plain call, error-body shape
    ("anthropic_messages", check_anthropic, anthropic, anthropic_client, anthropic_call, anthropic_error_shape),
    ("openai_chat", check_chat, openai, openai_client, chat_call, openai_error_shape),
    ("openai_responses", check_responses, openai, openai_client, responses_call, openai_error_shape),
]


FAULT_ANSWERS = {"anthropic_messages": anthropic_answer, "openai_chat": chat_answer, "openai_responses": responses_answer}


def describe(error):
    if isinstance(error, CheckFailed):
        return str(error)
    text = f"{type(error).__name__}: {error}"
    if not str(error):
        # A bare assert inside an SDK parser says nothing; name where it fired.
        frames = traceback.extract_tb(error.__traceback__)
        if frames:
            last = frames[-1]
            text += f"(raised at {os.path.basename(last.filename)}:{last.lineno} in {last.name}, while the SDK read the reply)"
    return text


def check_refused(args, sdk, make_client, call, shape, key):
    """A call the relay must refuse with 401: with no credentials (key None) or a wrong key."""
    if key is None:
        # The SDKs refuse to build a client with no key at all; a placeholder key whose header is
        # then omitted from the request sends no credentials.
        client = make_client(args, "placeholder")
        client.api_key = None
    else:
        client = make_client(args, key)
    try:
        call(client, args)
    except sdk.AuthenticationError as error:
        expect(error.status_code == 401, f"AuthenticationError with status {error.status_code}, expected 401")
        expect(shape(error.body), f"the 401's error body is not in the dialect's error shape: {error.body!r}")
        return
    except sdk.APIStatusError as error:
        raise CheckFailed(f"expected 401, got {error.status_code} ({type(error).__name__}): {error.body!r}")
    raise CheckFailed("the call succeeded; expected 401")


def self_test():
    """The walk finds what is missing: a Message as the relay once sent it (no cache counts)
    and a usage model with a null count must each be reported, and a complete one not."""
    thin = anthropic.types.Message.construct(**{
        "id": "m", "type": "message", "role": "assistant", "model": "m", "content": [],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": anthropic.types.Usage.construct(input_tokens=1, output_tokens=1, cache_read_input_tokens=None),
    })
    problems = []
    walk_model(thin, "Message", problems)
    expect(any(".usage.cache_creation_input_tokens" in p and "unset" in p for p in problems), f"a missing cache count is not reported: {problems}")
    expect(any(".usage.cache_read_input_tokens" in p and "null" in p for p in problems), f"a null cache count is not reported: {problems}")
    expect(any(p.startswith("Message.container ") for p in problems), f"a missing top-level member is not reported: {problems}")
    usage = openai.types.CompletionUsage.construct(prompt_tokens=1, completion_tokens=1, total_tokens=2,
                                                   prompt_tokens_details=None, completion_tokens_details=None)
    problems = []
    walk_model(usage, "CompletionUsage", problems)
    expect(problems == [], f"a complete model is reported: {problems}")
    print(json.dumps({"ok": True, "self_test": "passed"}))
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Check a model relay with the official anthropic and openai SDKs.")
    parser.add_argument("--base-url", required=True, help="the relay's root URL, e.g. http://127.0.0.1:PORT")
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--nonce", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--script", required=True, choices=["nonce", "tool", "faults", "fault-shapes"])
    parser.add_argument("--only", choices=[d[0] for d in DIALECTS], help="the one dialect `--script faults` checks")
    parser.add_argument("--model", default="checkfu-replay", help="model name sent in every request")
    args = parser.parse_args(argv)
    root = args.base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    args.anthropic_base, args.openai_base = root, root + "/v1"
    if not os.path.isdir(args.workspace):
        parser.error(f"--workspace {args.workspace}: not a directory")
    for name in ("api_key", "nonce", "token"):
        if getattr(args, name) == "":
            parser.error(f"--{name.replace('_', '-')} must not be empty")
    return args


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if argv == ["--fault-shapes-script"]:
        print(json.dumps(fault_shapes_script()))
        return 0
    args = parse_args(argv)
    if args.script == "faults" and args.only is None:
        print("check_sdk: --script faults needs --only DIALECT", file=sys.stderr)
        return 2
    if args.script in ("faults", "fault-shapes"):
        results = check_builtin_faults(args) if args.script == "faults" else check_fault_shapes(args)
        return summarize(args, results)
    results = []
    for dialect, check, sdk, make_client, call, shape in DIALECTS:
        for stream in (False, True):
            entry = {"dialect": dialect, "stream": stream, "script": args.script}
            args.problems = []
            try:
                check(args, stream)
                expect(not args.problems, "fields the SDK's response models define and the relay left out: " + "; ".join(args.problems))
                entry["ok"] = True
            except Exception as error:  # any SDK error is a finding about the relay, reported
                entry.update(ok=False, error=describe(error))
            results.append(entry)
        for case, key in (("no_key", None), ("wrong_key", args.api_key + "-wrong")):
            entry = {"dialect": dialect, "auth": case}
            try:
                check_refused(args, sdk, make_client, call, shape, key)
                entry["ok"] = True
            except Exception as error:
                entry.update(ok=False, error=describe(error))
            results.append(entry)
    return summarize(args, results)


def summarize(args, results):
    failed = [r for r in results if not r["ok"]]
    summary = {
        "ok": not failed,
        "script": args.script,
        "sdk": {"anthropic": anthropic.__version__, "openai": openai.__version__},
        "passed": len(results) - len(failed),
        "failed": len(failed),
        "checks": results,
    }
    print(json.dumps(summary))
    for r in failed:
        where = r["dialect"] + (f" stream={r['stream']}" if "stream" in r else f" auth={r['auth']}") + (f" call={r['call']}" if "call" in r else "")
        print(f"check_sdk: FAILED {where}: {r['error']}", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
