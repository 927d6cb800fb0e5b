#!/usr/bin/env bash
# Installs the real ACP agents the probe is tested against, pinned, into DIR (never into the
# repository). Usage: install.sh DIR
# Afterwards these executables exist:
#   DIR/node_modules/.bin/claude-code-acp   (Zed's ACP adapter around the Claude Agent SDK; speaks
#                                           the Anthropic Messages API via ANTHROPIC_BASE_URL)
#   DIR/node_modules/.bin/codex-acp         (node launcher for the native codex-acp binary; speaks
#                                           the OpenAI Responses API via a CODEX_HOME config.toml)
# codex-acp's shell tool needs `bwrap` (apt package bubblewrap) on PATH; this script does not
# install system packages. Running it again with the same pins changes nothing.
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: install.sh DIR" >&2
  exit 2
fi
dir="$1"
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --silent --save-exact \
  "@zed-industries/claude-code-acp@0.16.2" \
  "@zed-industries/codex-acp@0.16.0"
for bin in claude-code-acp codex-acp; do
  if [ ! -x "$dir/node_modules/.bin/$bin" ]; then
    echo "install.sh: $dir/node_modules/.bin/$bin is missing after npm install" >&2
    exit 1
  fi
done
