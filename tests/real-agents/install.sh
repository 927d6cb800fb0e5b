#!/usr/bin/env bash
# Installs the real ACP agents the probe is tested against, pinned, into DIR (never into the
# repository). Usage: install.sh DIR
# Afterwards these executables exist:
#   DIR/node_modules/.bin/claude-code-acp   (Zed's ACP adapter around the Claude Agent SDK; speaks
#                                           the Anthropic Messages API via ANTHROPIC_BASE_URL)
#   DIR/node_modules/.bin/codex-acp         (node launcher for the native codex-acp binary; speaks
#                                           the OpenAI Responses API via a CODEX_HOME config.toml)
#   DIR/claude-agent-acp/node_modules/.bin/claude-agent-acp
#                                           (Zed's newer adapter around the Claude Agent SDK, run
#                                           with claude-code-acp's recipe; a tree of its own, since
#                                           it pins another SDK and the image tests copy DIR's
#                                           node_modules; about 5 s and 34 MB to download)
#   DIR/more/node_modules/opencode-linux-x64/bin/opencode
#                                           (OpenCode, `opencode acp`; its provider from an
#                                           opencode.json in the home)
#   DIR/more/node_modules/@kilocode/cli-linux-x64/bin/kilo
#                                           (Kilo, `kilo acp`, an OpenCode fork; its provider from
#                                           a kilo.json in the home. Both forks' launcher packages
#                                           pick a platform package in a postinstall script, and
#                                           Kilo's newest launcher (7.8.1) names platform packages
#                                           the registry lacks, so the x64 packages are installed
#                                           alone, without scripts, and their binaries run)
#   DIR/more/node_modules/.bin/copilot      (GitHub Copilot CLI, `copilot --acp`; its provider
#                                           from COPILOT_PROVIDER_* variables)
#                                           (a tree of their own, about 590 MB: the image tests
#                                           copy DIR's node_modules)
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
mkdir -p "$dir/claude-agent-acp"
[ -f "$dir/claude-agent-acp/package.json" ] || echo '{"private":true}' > "$dir/claude-agent-acp/package.json"
npm install --prefix "$dir/claude-agent-acp" --no-audit --no-fund --silent --save-exact \
  "@zed-industries/claude-agent-acp@0.23.1"
mkdir -p "$dir/more"
[ -f "$dir/more/package.json" ] || echo '{"private":true}' > "$dir/more/package.json"
npm install --prefix "$dir/more" --no-audit --no-fund --silent --save-exact --ignore-scripts \
  "opencode-linux-x64@1.18.33" \
  "@kilocode/cli-linux-x64@7.7.9" \
  "@github/copilot@1.0.102"
for bin in node_modules/.bin/claude-code-acp node_modules/.bin/codex-acp claude-agent-acp/node_modules/.bin/claude-agent-acp \
  more/node_modules/opencode-linux-x64/bin/opencode more/node_modules/@kilocode/cli-linux-x64/bin/kilo more/node_modules/.bin/copilot; do
  if [ ! -x "$dir/$bin" ]; then
    echo "install.sh: $dir/$bin is missing after npm install" >&2
    exit 1
  fi
done
