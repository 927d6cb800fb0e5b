#!/usr/bin/env python3
"""Check the recorded corpus against the official ACP schema and summarise it.

Usage: validate.py SCHEMA DATA_DIR [README]

For every *.capture.jsonl under DATA_DIR:
  * each raw line in the per-direction and interleaved files must equal the
    capture's message (parsed), in order;
  * every message is validated with `jsonschema` (draft 2020-12):
      - the whole message against the schema root (envelope),
      - a request's params against the `$defs` entry whose x-method is the
        method and whose name ends in Request, with x-side matching the
        direction (client_to_agent -> "agent", agent_to_client -> "client",
        "protocol" either way),
      - a notification's params likewise (name ends in Notification),
      - a result against the method's *Response definition, the method being
        found from the request with the same id that flowed the other way,
      - an error object against `$defs/Error`.
    `_`-prefixed extension methods have no definition; only the envelope is checked.
Prints a Markdown table of counts and coverage, and the list of failures. With
README, replaces the text between the `<!-- summary:begin -->` and
`<!-- summary:end -->` markers with that output.
"""
import glob
import json
import os
import sys

from jsonschema import Draft202012Validator

DIRS = ("client_to_agent", "agent_to_client")


def main() -> int:
    schema_path, data_dir = sys.argv[1], sys.argv[2]
    readme = sys.argv[3] if len(sys.argv) > 3 else None
    schema = json.load(open(schema_path, encoding="utf-8"))
    defs = schema["$defs"]
    by_role: dict[tuple[str, str], tuple[str, str]] = {}  # (role, method) -> (def name, side)
    for name, d in defs.items():
        method = d.get("x-method")
        if not method:
            continue
        role = next(r for r in ("Request", "Response", "Notification") if name.endswith(r))
        by_role[(role, method)] = (name, d.get("x-side"))
    stable_requests = {m: side for (role, m), (_, side) in by_role.items() if role == "Request"}
    stable_notifications = {m: side for (role, m), (_, side) in by_role.items() if role == "Notification"}
    update_kinds = [o["properties"]["sessionUpdate"]["const"] for o in defs["SessionUpdate"]["oneOf"]]
    stop_reasons = [o["const"] for o in defs["StopReason"]["oneOf"]]

    validators: dict[str, Draft202012Validator] = {}

    def validator(name: str | None) -> Draft202012Validator:
        key = name or "<root>"
        if key not in validators:
            doc = {k: v for k, v in schema.items() if k != "anyOf"} if name else schema
            if name:
                doc = dict(doc, **{"$ref": f"#/$defs/{name}"})
            validators[key] = Draft202012Validator(doc)
        return validators[key]

    failures: list[str] = []
    rows: list[str] = []
    seen_methods: set[str] = set()
    seen_kinds: set[str] = set()
    seen_stops: set[str] = set()
    seen_outcomes: set[str] = set()
    total_bytes = 0

    def check(where: str, name: str | None, instance, what: str) -> None:
        errs = sorted(validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
        for e in errs[:3]:
            ptr = "/" + "/".join(str(p) for p in e.absolute_path)
            failures.append(f"{where}: {what} vs {name or 'root'} at {ptr}: {e.message[:200]}")

    for cap in sorted(glob.glob(os.path.join(data_dir, "*.capture.jsonl"))):
        stem = os.path.basename(cap)[: -len(".capture.jsonl")]
        entries = [json.loads(l) for l in open(cap, encoding="utf-8")]
        raw = {d: open(os.path.join(data_dir, f"{stem}.{d}.jsonl"), "rb").read().splitlines() for d in DIRS}
        inter = open(os.path.join(data_dir, f"{stem}.interleaved.jsonl"), "rb").read().splitlines()
        for f in glob.glob(os.path.join(data_dir, f"{stem}.*")):
            total_bytes += os.path.getsize(f)
        # Raw files agree with the capture.
        if [json.loads(l) for l in inter] != [e["message"] for e in entries]:
            failures.append(f"{stem}: interleaved file differs from capture")
        for d in DIRS:
            if [json.loads(l) for l in raw[d]] != [e["message"] for e in entries if e["direction"] == d]:
                failures.append(f"{stem}: {d} file differs from capture")

        counts = {d: {"request": 0, "response": 0, "notification": 0, "error": 0} for d in DIRS}
        methods: set[str] = set()
        kinds: list[str] = []
        pending: dict[tuple[str, object], str] = {}  # (direction of request, id) -> method
        for i, e in enumerate(entries, 1):
            d, m = e["direction"], e["message"]
            where = f"{stem}:{i}"
            check(where, None, m, "message")
            if "method" in m:
                method = m["method"]
                methods.add(method)
                is_request = "id" in m
                counts[d]["request" if is_request else "notification"] += 1
                if is_request:
                    pending[(d, m["id"])] = method
                role = "Request" if is_request else "Notification"
                if method.startswith("_"):
                    continue
                hit = by_role.get((role, method))
                if not hit:
                    failures.append(f"{where}: {role.lower()} {method} has no definition in the schema")
                    continue
                name, side = hit
                want = "agent" if d == "client_to_agent" else "client"
                if side not in (want, "protocol"):
                    failures.append(f"{where}: {method} sent {d} but x-side is {side}")
                check(where, name, m.get("params"), f"{method} params")
                if method == "session/update":
                    k = (m.get("params") or {}).get("update", {}).get("sessionUpdate")
                    kinds.append(k)
            else:
                other = DIRS[1] if d == DIRS[0] else DIRS[0]
                method = pending.pop((other, m.get("id")), None)
                if "error" in m:
                    counts[d]["error"] += 1
                    check(where, "Error", m["error"], "error")
                    continue
                counts[d]["response"] += 1
                if method is None:
                    failures.append(f"{where}: response id {m.get('id')!r} answers no open request from {other}")
                    continue
                if method.startswith("_"):
                    continue
                hit = by_role.get(("Response", method))
                if hit:
                    check(where, hit[0], m.get("result"), f"{method} result")
                res = m.get("result") or {}
                if method == "session/prompt" and "stopReason" in res:
                    seen_stops.add(res["stopReason"])
                if method == "session/request_permission":
                    seen_outcomes.add(res.get("outcome", {}).get("outcome"))
        seen_methods |= methods
        seen_kinds |= set(kinds)
        c2a, a2c = counts["client_to_agent"], counts["agent_to_client"]
        fmt = lambda c: f"{c['request']}/{c['response']}/{c['notification']}/{c['error']}"
        rows.append(f"| `{stem}` | {len(entries)} | {fmt(c2a)} | {fmt(a2c)} | "
                    f"{', '.join(f'`{x}`' for x in sorted(methods))} | "
                    f"{', '.join(f'`{x}`' for x in sorted(set(kinds)))} |")

    out = []
    out.append("Per scenario (the four files of a scenario hold the same messages). Counts are "
               "request/response/notification/error, per direction.\n")
    out.append("| capture | messages | client→agent | agent→client | methods | update kinds |")
    out.append("|---|---|---|---|---|---|")
    out.extend(rows)
    out.append("")
    missing_m = sorted(m for m in list(stable_requests) + list(stable_notifications) if m not in seen_methods)
    missing_k = [k for k in update_kinds if k not in seen_kinds]
    missing_s = [s for s in stop_reasons if s not in seen_stops]
    out.append(f"Corpus size: {total_bytes} bytes.\n")
    out.append(f"Stable methods in the schema: {len(stable_requests)} requests, {len(stable_notifications)} notifications; "
               f"not in any capture: {', '.join(missing_m) or 'none'}.")
    out.append(f"Update kinds in `SessionUpdate`: {len(update_kinds)}; not in any capture: {', '.join(missing_k) or 'none'}.")
    out.append(f"Stop reasons in `StopReason`: {len(stop_reasons)}; not in any capture: {', '.join(missing_s) or 'none'}.")
    out.append(f"Permission outcomes seen: {', '.join(sorted(o for o in seen_outcomes if o))}.\n")
    expected = [f for f in failures if f.split(":")[0].endswith("-invalid")]
    unexpected = [f for f in failures if f not in expected]
    out.append(f"Schema validation: {len(unexpected)} unexpected failure(s)"
               + (":" if unexpected else "."))
    out.extend(f"- {f}" for f in unexpected)
    out.append(f"\nExpected failures (the deliberately malformed probes of the `*-invalid` scenarios): {len(expected)}.")
    out.extend(f"- {f}" for f in expected)
    text = "\n".join(out) + "\n"
    print(text)
    if readme:
        body = open(readme, encoding="utf-8").read()
        begin, end = "<!-- summary:begin -->", "<!-- summary:end -->"
        a, b = body.index(begin) + len(begin), body.index(end)
        open(readme, "w", encoding="utf-8").write(body[:a] + "\n" + text + body[b:])
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
