// What both shims share: the shim's command line, running the CLI with its stdout read line by
// line through a translator, and printing the normalized stream (schemas/oneshot-stream-v1).
// Node's standard library only.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** Parses `[--prompt-path FILE] [--resume=SESSION_ID] [--output-schema FILE]`; also accepts
 *  `--prompt-path=FILE`, `--resume ID` and `--output-schema=FILE`. Throws on anything else. */
export function parseArgs(argv) {
  const out = { promptPath: null, resume: null, outputSchema: null };
  const names = { '--prompt-path': 'promptPath', '--resume': 'resume', '--output-schema': 'outputSchema' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const key = names[name];
    if (!key) throw new Error(`unknown argument ${JSON.stringify(arg)}`);
    let value;
    if (eq > 0) value = arg.slice(eq + 1);
    else if (i + 1 < argv.length) value = argv[++i];
    else throw new Error(`${name} needs a value`);
    if (out[key] !== null) throw new Error(`${name} given twice`);
    if (value === '') throw new Error(`${name} has an empty value`);
    out[key] = value;
  }
  return out;
}

/** The prompt: the file's text, or all of stdin. */
export async function readPrompt(promptPath) {
  if (promptPath !== null) return readFileSync(promptPath, 'utf8');
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** A non-negative integer, or undefined. */
export function count(value) {
  return Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** An object without its undefined members. */
export function compact(object) {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined));
}

/** Runs `bin args` in the current directory with `stdin` written to it, feeding each stdout
 *  line that parses as a JSON object to `translator.feed` and printing the events it returns,
 *  one JSON object a line; `translator.end()` runs when stdout closes. The CLI's stderr is the
 *  shim's. SIGTERM and SIGINT are forwarded to the CLI. Resolves to the exit status the shim
 *  should have: 0 when a terminal event was printed, 1 otherwise. */
export function run(bin, args, stdin, translator, out = process.stdout) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    } catch (error) {
      process.stderr.write(`shim: cannot start ${bin}: ${error.message}\n`);
      resolve(1);
      return;
    }
    let terminal = false;
    const print = (events) => {
      for (const event of events) {
        if (event.type === 'terminal') terminal = true;
        out.write(JSON.stringify(event) + '\n');
      }
    };
    const forward = (signal) => () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    const onTerm = forward('SIGTERM');
    const onInt = forward('SIGINT');
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    let failed = false;
    child.on('error', (error) => {
      failed = true;
      process.stderr.write(`shim: cannot run ${bin}: ${error.message}\n`);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      let value;
      try {
        value = JSON.parse(line);
      } catch {
        return; // not a stream line (a banner, a warning): not ours to judge
      }
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) print(translator.feed(value));
    });
    let closed = 0;
    const done = () => {
      if (++closed < 2) return;
      print(translator.end());
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      resolve(terminal && !failed ? 0 : 1);
    };
    lines.on('close', done);
    child.on('close', done);
  });
}

/** The shim's main: parse, read the prompt, build the CLI's argv, run. */
export async function main({ name, binEnv, binDefault, argv: buildArgv, translator }) {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${name}: ${error.message}\nusage: ${name} [--prompt-path FILE] [--resume=SESSION_ID] [--output-schema FILE]\n`);
    process.exit(2);
  }
  let prompt;
  let cliArgs;
  try {
    prompt = await readPrompt(args.promptPath);
    cliArgs = buildArgv(args);
  } catch (error) {
    process.stderr.write(`${name}: ${error.message}\n`);
    process.exit(2);
  }
  const bin = process.env[binEnv] || binDefault;
  const status = await run(bin, cliArgs, prompt, translator());
  process.exitCode = status;
}
