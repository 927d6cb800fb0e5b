#!/usr/bin/env node
// oneshot-v1 shim for Claude Code: `claude-code.mjs [--prompt-path FILE] [--resume=SESSION_ID]
// [--output-schema FILE]` runs `claude -p --output-format stream-json --verbose` in the current
// directory, the prompt on its stdin (FILE's text, or the shim's stdin), `--resume ID` when
// resuming and `--json-schema SCHEMA` (the file's JSON, compacted) for an output schema, and
// prints the normalized stream (schemas/oneshot-stream-v1.schema.json). The CLI is `claude` on
// PATH, or CHECKFU_CLAUDE_BIN. Exit 0 when a terminal event was printed, 1 otherwise, 2 for a
// usage error.
import { main } from './lib/common.mjs';
import { claudeArgv, claudeTranslator } from './lib/claude.mjs';

await main({ name: 'claude-code.mjs', binEnv: 'CHECKFU_CLAUDE_BIN', binDefault: 'claude', argv: claudeArgv, translator: claudeTranslator });
