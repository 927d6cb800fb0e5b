// Unit tests of the oneshot-v1 shims (recipes/oneshot/shims/): the recorded streams of the real
// CLIs (fixtures/, recorded against this project's relay on loopback with the pinned versions of
// tests/real-agents/install-oneshot.sh) through each shim's translator, and each shim run whole
// with a fake CLI (the CHECKFU_*_BIN override) that prints a fixture.
// Run: node --test tests/oneshot-shims/
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { claudeArgv, claudeTranslator } from '../../recipes/oneshot/shims/lib/claude.mjs';
import { codexArgv, codexTranslator } from '../../recipes/oneshot/shims/lib/codex.mjs';
import { parseArgs } from '../../recipes/oneshot/shims/lib/common.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// Every temporary directory a test makes, removed when the file's tests are done.
const made = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
function scratchDir() {
  const dir = mkdtempSync(join(tmpdir(), 'shim-'));
  made.push(dir);
  return dir;
}
const root = join(here, '..', '..');
const schema = JSON.parse(readFileSync(join(root, 'schemas', 'oneshot-stream-v1.schema.json'), 'utf8'));

/** Checks one normalized event against the stream schema: its `type` names one definition,
 *  whose required members are present, whose `const`, `type` and `minLength` hold, and which
 *  has no other members (every definition is closed). */
function validate(event) {
  assert.equal(typeof event, 'object');
  const definition = Object.values(schema.$defs).find((d) => d.properties.type.const === event.type);
  assert.ok(definition, `no definition for event type ${JSON.stringify(event.type)}`);
  assert.equal(definition.additionalProperties, false);
  for (const name of definition.required) assert.ok(name in event, `${event.type} lacks ${name}`);
  for (const [name, value] of Object.entries(event)) {
    const property = definition.properties[name];
    assert.ok(property, `${event.type} has the extra member ${name}`);
    if ('const' in property) assert.equal(value, property.const);
    switch (property.type) {
      case 'string':
        assert.equal(typeof value, 'string', `${event.type}.${name}`);
        if (property.minLength) assert.ok(value.length >= property.minLength, `${event.type}.${name} is too short`);
        if (property.maxLength) assert.ok(value.length <= property.maxLength, `${event.type}.${name} is too long`);
        break;
      case 'integer':
        assert.ok(Number.isInteger(value) && value >= (property.minimum ?? -Infinity), `${event.type}.${name}`);
        break;
      case 'boolean':
        assert.equal(typeof value, 'boolean', `${event.type}.${name}`);
        break;
      default:
        break;
    }
  }
}

function translate(translator, fixture) {
  const lines = readFileSync(join(here, 'fixtures', fixture), 'utf8').split('\n').filter((l) => l.trim() !== '');
  const events = [];
  for (const line of lines) events.push(...translator.feed(JSON.parse(line)));
  events.push(...translator.end());
  for (const event of events) validate(event);
  return events;
}

const types = (events) => events.map((e) => e.type);
const terminal = (events) => events.find((e) => e.type === 'terminal');

test('claude: a turn gives session, text, usage and terminal', () => {
  const events = translate(claudeTranslator(), 'claude-success.jsonl');
  assert.deepEqual(types(events), ['session', 'text', 'usage', 'terminal']);
  assert.equal(events[0].session_id, 'ed09be1c-81d7-4ba9-a957-790b8deffba0');
  assert.equal(events[1].text, 'The nonce is cf-97de06533ef3afd0.');
  assert.deepEqual(events[2], { type: 'usage', input_tokens: 168, output_tokens: 9, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  assert.deepEqual(events[3], { type: 'terminal', stop_reason: 'end_turn', result: 'The nonce is cf-97de06533ef3afd0.' });
});

test('claude: a resumed turn keeps the session id', () => {
  const events = translate(claudeTranslator(), 'claude-resume.jsonl');
  assert.equal(events[0].session_id, 'ed09be1c-81d7-4ba9-a957-790b8deffba0');
  assert.equal(terminal(events).result, 'The nonce is cf-00000000000000aa.');
});

test('claude: --json-schema ends in the StructuredOutput tool, and the result is its input as JSON', () => {
  const events = translate(claudeTranslator(), 'claude-schema.jsonl');
  assert.deepEqual(types(events), ['session', 'tool_use', 'tool_result', 'usage', 'terminal']);
  assert.deepEqual(events[1], { type: 'tool_use', id: 'cfcall000001', name: 'StructuredOutput', input: { answer: 'cf-7fa7ec278fb8f6fd' } });
  assert.deepEqual(events[2], { type: 'tool_result', id: 'cfcall000001' });
  // Claude reports stop_reason tool_use for this turn; the turn ended normally.
  assert.deepEqual(terminal(events), { type: 'terminal', stop_reason: 'end_turn', result: '{"answer":"cf-7fa7ec278fb8f6fd"}' });
});

test('claude: a schema the model ignored still ends in a terminal whose result is plain text (the probe judges it)', () => {
  const events = translate(claudeTranslator(), 'claude-schema-unhonoured.jsonl');
  assert.equal(terminal(events).result, 'The nonce is cf-97de06533ef3afd0.');
});

test('claude: a model answering 500 is an error, with no terminal', () => {
  const events = translate(claudeTranslator(), 'claude-model-500.jsonl');
  assert.equal(terminal(events), undefined);
  const error = events.find((e) => e.type === 'error');
  assert.equal(error.code, '500');
  assert.match(error.message, /^API Error: 500 /);
  assert.equal(types(events).at(-1), 'error');
});

test('claude: a refused key (401) is an error, with no terminal', () => {
  const events = translate(claudeTranslator(), 'claude-refused-401.jsonl');
  assert.equal(terminal(events), undefined);
  assert.deepEqual(events.at(-1), { type: 'error', message: "Failed to authenticate. API Error: 401 the call does not carry this session's key", code: '401' });
});

test('claude: a retried call that then succeeds is a success', () => {
  const events = translate(claudeTranslator(), 'claude-retry-then-success.jsonl');
  assert.deepEqual(types(events), ['session', 'text', 'usage', 'terminal']);
});

test('claude: tool results, deltas, unknown types, a failed subtype and lines after the result', () => {
  const t = claudeTranslator();
  const lines = [
    { type: 'system', subtype: 'init', session_id: 's1' },
    { type: 'stream_event', event: { type: 'content_block_delta', delta: { type: 'text_delta', text: 'he' } }, session_id: 's1' },
    { type: 'assistant', message: { content: [{ type: 'thinking', thinking: 'x' }, { type: 'tool_use', id: 't1', name: 'Read', input: { file_path: '/x' } }] }, session_id: 's1' },
    { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true, content: 'no' }] }, session_id: 's1' },
    { type: 'brand_new_kind', session_id: 's1' },
    { type: 'result', subtype: 'error_max_turns', is_error: false, usage: { input_tokens: -1, output_tokens: 2 }, errors: ['max turns'], session_id: 's1' },
    { type: 'result', subtype: 'success', result: 'late', session_id: 's1' },
  ];
  const events = lines.flatMap((l) => t.feed(l));
  events.forEach(validate);
  assert.deepEqual(events, [
    { type: 'session', session_id: 's1' },
    { type: 'text_delta', text: 'he' },
    { type: 'tool_use', id: 't1', name: 'Read', input: { file_path: '/x' } },
    { type: 'tool_result', id: 't1', is_error: true },
    { type: 'usage', output_tokens: 2 },
    { type: 'error', message: 'max turns', code: 'error_max_turns' },
  ]);
});

test('claude: a Read tool call and its result correlate by id', () => {
  const events = translate(claudeTranslator(), 'claude-tool.jsonl');
  assert.deepEqual(types(events), ['session', 'tool_use', 'tool_result', 'text', 'usage', 'terminal']);
  assert.deepEqual(events[1], { type: 'tool_use', id: 'cfcall000001', name: 'Read', input: { file_path: '/tmp/os/r6.ws/checkfu-probe-token.txt' } });
  assert.deepEqual(events[2], { type: 'tool_result', id: 'cfcall000001' });
});

test('claude: argv', () => {
  const dir = scratchDir();
  writeFileSync(join(dir, 's.json'), '{\n  "type": "object"\n}\n');
  assert.deepEqual(claudeArgv({ resume: null, outputSchema: null }), ['-p', '--output-format', 'stream-json', '--verbose']);
  assert.deepEqual(claudeArgv({ resume: 'abc', outputSchema: join(dir, 's.json') }), ['-p', '--output-format', 'stream-json', '--verbose', '--resume', 'abc', '--json-schema', '{"type":"object"}']);
});

test('codex: a turn gives session, text, usage and terminal', () => {
  const events = translate(codexTranslator(), 'codex-success.jsonl');
  assert.deepEqual(events, [
    { type: 'session', session_id: '01a23d0f-09c4-7e52-891a-1ca1cfe7c32e' },
    { type: 'text', text: 'The nonce is cf-97de06533ef3afd0.' },
    { type: 'usage', input_tokens: 125, output_tokens: 9, cache_read_input_tokens: 0 },
    { type: 'terminal', stop_reason: 'end_turn', result: 'The nonce is cf-97de06533ef3afd0.' },
  ]);
});

test('codex: a resumed turn keeps the thread id', () => {
  const events = translate(codexTranslator(), 'codex-resume.jsonl');
  assert.equal(events[0].session_id, '01a23d0f-09c4-7e52-891a-1ca1cfe7c32e');
  assert.equal(terminal(events).result, 'The nonce is cf-00000000000000aa.');
});

test('codex: --output-schema answers JSON text as the agent message', () => {
  const events = translate(codexTranslator(), 'codex-schema.jsonl');
  assert.deepEqual(JSON.parse(terminal(events).result), { answer: 'cf-7fa7ec278fb8f6fd' });
});

test('codex: retry notices then turn.failed (model 500, refused key) are one error, with no terminal', () => {
  for (const [fixture, message] of [
    ['codex-model-500.jsonl', 'We’re currently experiencing high demand, which may cause temporary errors.'],
    ['codex-refused-401.jsonl', "unexpected status 401 Unauthorized: the call does not carry this session's key, url: http://127.0.0.1:37155/v1/responses"],
  ]) {
    const events = translate(codexTranslator(), fixture);
    assert.deepEqual(types(events), ['session', 'error'], fixture);
    assert.deepEqual(events[1], { type: 'error', message, code: 'turn.failed' });
  }
});

test('codex: a retry notice in a turn that completes is not an error', () => {
  const events = translate(codexTranslator(), 'codex-retry-then-success.jsonl');
  assert.deepEqual(types(events), ['session', 'text', 'usage', 'terminal']);
});

test('codex: tool items, a non-fatal error item, a fatal error with no turn end', () => {
  const t = codexTranslator();
  const lines = [
    { type: 'thread.started', thread_id: 'th' },
    { type: 'turn.started' },
    { type: 'item.started', item: { id: 'item_1', type: 'command_execution', command: 'cat f', aggregated_output: '', exit_code: null, status: 'in_progress' } },
    { type: 'item.completed', item: { id: 'item_1', type: 'command_execution', command: 'cat f', aggregated_output: 'x', exit_code: 1, status: 'failed' } },
    { type: 'item.completed', item: { id: 'item_2', type: 'mcp_tool_call', server: 's', tool: 't', arguments: { a: 1 }, status: 'completed' } },
    { type: 'item.completed', item: { id: 'item_3', type: 'error', message: 'model metadata not found; using fallback' } },
    { type: 'item.completed', item: { id: 'item_4', type: 'reasoning', text: 'hm' } },
    { type: 'error', message: 'stream disconnected before completion' },
  ];
  const events = [...lines.flatMap((l) => t.feed(l)), ...t.end()];
  events.forEach(validate);
  assert.deepEqual(events, [
    { type: 'session', session_id: 'th' },
    { type: 'tool_use', id: 'item_1', name: 'command_execution', input: { command: 'cat f' } },
    { type: 'tool_result', id: 'item_1', is_error: true },
    { type: 'tool_use', id: 'item_2', name: 's.t', input: { a: 1 } },
    { type: 'tool_result', id: 'item_2', is_error: false },
    { type: 'error', message: 'stream disconnected before completion', code: 'error' },
  ]);
  const quiet = codexTranslator();
  quiet.feed({ type: 'thread.started', thread_id: 'th' });
  assert.deepEqual(quiet.end(), [], 'a stream cut short with no error prints nothing more (and so no terminal)');
});

test('codex: a shell command is a tool use and its result, by item id', () => {
  const events = translate(codexTranslator(), 'codex-tool.jsonl');
  assert.deepEqual(types(events), ['session', 'tool_use', 'tool_result', 'text', 'usage', 'terminal']);
  assert.deepEqual(events[1], { type: 'tool_use', id: 'item_0', name: 'command_execution', input: { command: "/bin/bash -lc \"cat '/tmp/os/r6.ws/checkfu-probe-token.txt'\"" } });
  assert.deepEqual(events[2], { type: 'tool_result', id: 'item_0', is_error: false });
  assert.equal(terminal(events).result, 'The nonce is cf-3333ec886be493f0.');
});

test('codex: argv', () => {
  assert.deepEqual(codexArgv({ resume: null, outputSchema: null }), ['exec', '--json', '--skip-git-repo-check', '-']);
  assert.deepEqual(codexArgv({ resume: 'th', outputSchema: '/s.json' }), ['exec', '--json', '--skip-git-repo-check', '--output-schema', '/s.json', 'resume', 'th', '-']);
});

test('arguments', () => {
  assert.deepEqual(parseArgs(['--prompt-path', '/p', '--resume=abc', '--output-schema', '/s']), { promptPath: '/p', resume: 'abc', outputSchema: '/s' });
  assert.deepEqual(parseArgs([]), { promptPath: null, resume: null, outputSchema: null });
  assert.throws(() => parseArgs(['--model', 'x']), /unknown argument/);
  assert.throws(() => parseArgs(['--resume=']), /empty/);
  assert.throws(() => parseArgs(['--prompt-path']), /needs a value/);
});

/** A fake CLI: records its argv and stdin to $FAKE_LOG, prints $FAKE_FIXTURE, exits $FAKE_EXIT. */
function fakeCli(dir) {
  const path = join(dir, 'fake-cli.mjs');
  writeFileSync(path, `#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
const stdin = readFileSync(0, 'utf8');
writeFileSync(process.env.FAKE_LOG, JSON.stringify({ argv: process.argv.slice(2), stdin, cwd: process.cwd() }));
process.stdout.write('not json: a banner\\n');
process.stdout.write(readFileSync(process.env.FAKE_FIXTURE, 'utf8'));
process.stderr.write('fake stderr\\n');
process.exit(Number(process.env.FAKE_EXIT ?? 0));
`);
  chmodSync(path, 0o755);
  return path;
}

function runShim(shim, binEnv, fixture, args, { input, exit = 0 } = {}) {
  const dir = scratchDir();
  const log = join(dir, 'log.json');
  const result = spawnSync(join(root, 'recipes', 'oneshot', 'shims', shim), args, {
    cwd: dir,
    input: input ?? '',
    env: { ...process.env, [binEnv]: fakeCli(dir), FAKE_LOG: log, FAKE_FIXTURE: join(here, 'fixtures', fixture), FAKE_EXIT: String(exit) },
    encoding: 'utf8',
  });
  const lines = result.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  lines.forEach(validate);
  return { status: result.status, lines, stderr: result.stderr, seen: JSON.parse(readFileSync(log, 'utf8')), dir };
}

test('claude-code.mjs runs the CLI with the prompt file on stdin and exits 0 on a terminal', () => {
  const dir = scratchDir();
  writeFileSync(join(dir, 'prompt.txt'), 'Reply with cf-97de06533ef3afd0.');
  const run = runShim('claude-code.mjs', 'CHECKFU_CLAUDE_BIN', 'claude-success.jsonl', ['--prompt-path', join(dir, 'prompt.txt'), '--resume=ed09']);
  assert.equal(run.status, 0);
  assert.deepEqual(run.seen.argv, ['-p', '--output-format', 'stream-json', '--verbose', '--resume', 'ed09']);
  assert.equal(run.seen.stdin, 'Reply with cf-97de06533ef3afd0.');
  assert.equal(run.seen.cwd, run.dir);
  assert.deepEqual(types(run.lines), ['session', 'text', 'usage', 'terminal']);
  assert.match(run.stderr, /fake stderr/);
});

test('claude-code.mjs exits 1 without a terminal even when the CLI exits 0', () => {
  const run = runShim('claude-code.mjs', 'CHECKFU_CLAUDE_BIN', 'claude-model-500.jsonl', [], { input: 'from stdin', exit: 0 });
  assert.equal(run.status, 1);
  assert.equal(run.seen.stdin, 'from stdin');
  assert.equal(types(run.lines).at(-1), 'error');
});

test('codex.mjs runs codex exec with resume and the schema file, and reads the prompt from stdin', () => {
  const run = runShim('codex.mjs', 'CHECKFU_CODEX_BIN', 'codex-schema.jsonl', ['--resume=th', '--output-schema', '/s.json'], { input: 'prompt' });
  assert.equal(run.status, 0);
  assert.deepEqual(run.seen.argv, ['exec', '--json', '--skip-git-repo-check', '--output-schema', '/s.json', 'resume', 'th', '-']);
  assert.equal(run.seen.stdin, 'prompt');
  assert.equal(types(run.lines).at(-1), 'terminal');
});

test('codex.mjs exits 1 on turn.failed', () => {
  const run = runShim('codex.mjs', 'CHECKFU_CODEX_BIN', 'codex-model-500.jsonl', [], { exit: 1 });
  assert.equal(run.status, 1);
  assert.deepEqual(types(run.lines), ['session', 'error']);
});

test('a shim with an unknown argument exits 2 and runs nothing', () => {
  const result = spawnSync(join(root, 'recipes', 'oneshot', 'shims', 'codex.mjs'), ['--model', 'x'], { env: { ...process.env, CHECKFU_CODEX_BIN: '/nonexistent' }, encoding: 'utf8' });
  assert.equal(result.status, 2);
  assert.equal(result.stdout, '');
});

test('a CLI that cannot start is exit 1 with nothing on stdout', () => {
  const result = spawnSync(join(root, 'recipes', 'oneshot', 'shims', 'claude-code.mjs'), [], { input: 'x', env: { ...process.env, CHECKFU_CLAUDE_BIN: '/nonexistent/claude' }, encoding: 'utf8' });
  assert.equal(result.status, 1);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /cannot (start|run)/);
});

test('SIGTERM to a shim reaches the CLI, and the shim exits 1 with no terminal', async () => {
  const { spawn } = await import('node:child_process');
  const dir = scratchDir();
  const cli = join(dir, 'slow-cli.mjs');
  const mark = join(dir, 'signal.txt');
  writeFileSync(cli, `#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
process.on('SIGTERM', () => { writeFileSync(${JSON.stringify(mark)}, 'SIGTERM'); process.exit(143); });
process.stdout.write(JSON.stringify({ type: 'thread.started', thread_id: 'th' }) + '\\n');
setInterval(() => {}, 1000);
`);
  chmodSync(cli, 0o755);
  const shim = spawn(join(root, 'recipes', 'oneshot', 'shims', 'codex.mjs'), [], { env: { ...process.env, CHECKFU_CODEX_BIN: cli }, stdio: ['pipe', 'pipe', 'inherit'] });
  shim.stdin.end('prompt');
  let out = '';
  shim.stdout.on('data', (d) => { out += d; });
  await new Promise((resolve) => { const wait = () => (out.includes('session') ? resolve() : setTimeout(wait, 20)); wait(); });
  shim.kill('SIGTERM');
  const status = await new Promise((resolve) => shim.on('close', (code) => resolve(code)));
  assert.equal(status, 1);
  assert.equal(readFileSync(mark, 'utf8'), 'SIGTERM');
  assert.deepEqual(out.trim().split('\n').map((l) => JSON.parse(l)), [{ type: 'session', session_id: 'th' }]);
});
