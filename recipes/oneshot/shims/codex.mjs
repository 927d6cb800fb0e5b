#!/usr/bin/env node
// oneshot-v1 shim for Codex: `codex.mjs [--prompt-path FILE] [--resume=SESSION_ID]
// [--output-schema FILE]` runs `codex exec --json --skip-git-repo-check [--output-schema FILE]
// [resume SESSION_ID] -` in the current directory, the prompt on its stdin (FILE's text, or the
// shim's stdin), and prints the normalized stream (schemas/oneshot-stream-v1.schema.json). The
// CLI is `codex` on PATH, or CHECKFU_CODEX_BIN. Exit 0 when a terminal event was printed, 1
// otherwise, 2 for a usage error.
import { main } from './lib/common.mjs';
import { codexArgv, codexTranslator } from './lib/codex.mjs';

await main({ name: 'codex.mjs', binEnv: 'CHECKFU_CODEX_BIN', binDefault: 'codex', argv: codexArgv, translator: codexTranslator });
