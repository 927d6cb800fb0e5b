#!/usr/bin/env bash
# Installs the official TypeScript ACP SDK (pinned) into DIR, beside a copy of agent.mjs, so
# that `node DIR/agent.mjs` runs the probe's TypeScript fixture agent. Nothing lands in the
# repository. Usage: install.sh DIR   (then set CHECKFU_TS_AGENT=DIR/agent.mjs)
set -euo pipefail
dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$dir"
cp "$here/agent.mjs" "$dir/agent.mjs"
cd "$dir"
[ -f package.json ] || echo '{"private":true,"type":"module"}' > package.json
npm install --no-audit --no-fund --silent --save-exact "@agentclientprotocol/sdk@2.4.0"
