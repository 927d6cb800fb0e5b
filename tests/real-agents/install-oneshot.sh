#!/usr/bin/env bash
# Installs the real one-shot CLIs the oneshot-v1 recipes (recipes/oneshot/) are tested against,
# pinned, into DIR (never into the repository). Usage: install-oneshot.sh DIR
# Afterwards these executables exist:
#   DIR/node_modules/.bin/claude   (Claude Code; `claude -p --output-format stream-json --verbose`
#                                  speaks the Anthropic Messages API via ANTHROPIC_BASE_URL)
#   DIR/node_modules/.bin/codex    (node launcher for the native Codex CLI; `codex exec --json`
#                                  speaks the OpenAI Responses API via a CODEX_HOME config.toml)
# The shims in recipes/oneshot/shims/ find them as `claude` / `codex` on PATH, so put
# DIR/node_modules/.bin on PATH (or set CHECKFU_CLAUDE_BIN / CHECKFU_CODEX_BIN).
# Running it again with the same pins changes nothing.
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: install-oneshot.sh DIR" >&2
  exit 2
fi
dir="$1"
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --silent --save-exact \
  "@anthropic-ai/claude-code@2.1.332" \
  "@openai/codex@0.171.0" \
  "@qwen-code/qwen-code@0.24.4"
for bin in claude codex qwen; do
  if [ ! -x "$dir/node_modules/.bin/$bin" ]; then
    echo "install-oneshot.sh: $dir/node_modules/.bin/$bin is missing after npm install" >&2
    exit 1
  fi
done
