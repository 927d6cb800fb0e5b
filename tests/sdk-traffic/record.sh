#!/usr/bin/env bash
# Regenerates tests/data/sdk-traffic/ from the two official ACP SDKs.
# Needs node >= 20 with npm, and a CPython 3.11 (set PYTHON to override).
# Installs the pinned SDKs into a temporary directory (nothing lands in the repo),
# runs every scenario for both SDKs, then validates the result against
# schemas/acp-v1.schema.json and refreshes the summary table in README.md. The ACP v2 pair
# (ts-v2/) writes tests/data/sdk-traffic/v2/, which tests/it/sdk_traffic_v2.rs validates.
set -euo pipefail

TS_SDK="@agentclientprotocol/sdk@2.4.0"
PY_SDK="agent-client-protocol==0.12.1"
# pydantic is pinned too: the Python SDK's -32602 error data embeds its version.
PY_PINS=(pydantic==2.14.4 jsonschema==4.26.0)
SCENARIOS=(lifecycle turn concurrent invalid)

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/tests/data/sdk-traffic"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/sdk-traffic.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== installing $TS_SDK into $work/ts"
mkdir -p "$work/ts" "$work/py"
cp "$here/ts/agent.mjs" "$here/ts/client.mjs" "$here/tee.py" "$work/ts/"
(cd "$work/ts" && echo '{"private":true,"type":"module"}' > package.json \
  && npm install --no-audit --no-fund --silent --save-exact "$TS_SDK")

echo "== installing $PY_SDK into $work/venv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$PY_SDK" "${PY_PINS[@]}"
cp "$here/py/agent.py" "$here/py/client.py" "$here/tee.py" "$work/py/"

mkdir -p "$out" "$out/v2"
rm -f "$out"/ts-*.jsonl "$out"/py-*.jsonl "$out"/v2/ts-v2-*.jsonl
# The ACP v2 pair (the same package's experimental v2 API) beside the v1 files; node finds
# the package from the subdirectory.
mkdir -p "$work/ts/v2"
cp "$here/ts-v2/agent.mjs" "$here/ts-v2/client.mjs" "$here/tee.py" "$work/ts/v2/"
echo "== ts v2 turn"
(cd "$work/ts/v2" && timeout 120 node client.mjs "$out/v2")
for s in "${SCENARIOS[@]}"; do
  echo "== ts $s"
  (cd "$work/ts" && timeout 120 node client.mjs "$s" "$out")
  echo "== py $s"
  # The Python client logs the SDK's own rejection of `notice`/`compaction_*`
  # updates (see README); that stderr noise is expected.
  (cd "$work/py" && timeout 120 "$work/venv/bin/python" client.py "$s" "$out" 2>"$work/py-$s.stderr") \
    || { cat "$work/py-$s.stderr" >&2; exit 1; }
done

echo "== validating against schemas/acp-v1.schema.json"
"$work/venv/bin/python" "$here/validate.py" "$repo/schemas/acp-v1.schema.json" "$out" "$here/README.md"
