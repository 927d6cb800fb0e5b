#!/usr/bin/env bash
# Installs GitHub's Markdown stylesheet (npm `github-markdown-css`, pinned) into DIR for the
# docs check, outside the repository. check.mjs also holds the file to its sha256.
# Usage: install.sh DIR   (then: node tests/docs-render/check.mjs --css DIR/node_modules/github-markdown-css PAGE.md)
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"private":true}' > package.json
npm install --no-audit --no-fund --silent --save-exact "github-markdown-css@5.9.0"
