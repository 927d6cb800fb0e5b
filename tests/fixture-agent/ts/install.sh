#!/usr/bin/env bash
# Installs the official TypeScript ACP SDK (pinned) into DIR, beside copies of agent.mjs (the
# probe's TypeScript fixture agent, ACP v1) and agent-v2.mjs (its ACP v2 reference agent), with what
# they share (mechanisms.mjs), so that
# `node DIR/agent.mjs` and `node DIR/agent-v2.mjs` run them. Nothing lands in the repository.
# Usage: install.sh DIR   (then set CHECKFU_TS_AGENT=DIR/agent.mjs; the v2 tests find
# agent-v2.mjs beside it)
set -euo pipefail
dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$dir"
cp "$here/agent.mjs" "$dir/agent.mjs"
cp "$here/agent-v2.mjs" "$dir/agent-v2.mjs"
cp "$here/mechanisms.mjs" "$dir/mechanisms.mjs"
cd "$dir"
[ -f package.json ] || echo '{"private":true,"type":"module"}' > package.json
npm install --no-audit --no-fund --silent --save-exact "@agentclientprotocol/sdk@2.4.0"
