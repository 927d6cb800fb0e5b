// Codex's stream (`codex exec --json`) into the normalized stream
// (schemas/oneshot-stream-v1.schema.json).
//
// | Codex prints | the shim prints |
// |---|---|
// | `thread.started` with `thread_id` | `session` |
// | `item.completed` `agent_message` | `text` |
// | `item.started` of a tool item (`command_execution`, `mcp_tool_call`, `file_change`, `web_search`, …) | `tool_use` |
// | `item.completed` of a tool item | `tool_use` (unless already printed), `tool_result` (`is_error` when failed or a nonzero exit code) |
// | `turn.completed` | `usage`, then `terminal` (`end_turn`, result: the last agent message) |
// | `turn.failed` | `error` (no terminal) |
// | a top-level `error` | nothing at once (see below) |
//
// Codex prints a top-level `error` for each retry of the model call ("Reconnecting... 2/5 (…)")
// and once more, without that prefix, before `turn.failed`; an `error` item
// (`item.completed` of type `error`) is a non-fatal notice inside a turn that goes on. Neither is
// a failure by itself: `turn.failed` is. A non-retry top-level `error` is kept, and printed as the
// error only when the stream ends with neither `turn.completed` nor `turn.failed`.
// `reasoning`, `todo_list`, `item.updated` and unknown types are not events.

import { compact, count } from './common.mjs';

const NOT_TOOLS = new Set(['agent_message', 'reasoning', 'todo_list', 'error', 'user_message']);

function toolName(item) {
  switch (item.type) {
    case 'mcp_tool_call':
      return [item.server, item.tool].filter((s) => typeof s === 'string' && s !== '').join('.') || item.type;
    default:
      return item.type;
  }
}

function toolInput(item) {
  switch (item.type) {
    case 'command_execution':
      return compact({ command: item.command });
    case 'mcp_tool_call':
      return item.arguments;
    case 'file_change':
      return compact({ changes: item.changes });
    case 'web_search':
      return compact({ query: item.query });
    default:
      return undefined;
  }
}

function toolFailed(item) {
  if (item.status === 'failed' || item.status === 'declined') return true;
  if (Number.isInteger(item.exit_code) && item.exit_code !== 0) return true;
  if (item.error !== undefined && item.error !== null) return true;
  return false;
}

export function codexTranslator() {
  let session = null;
  let finished = false;
  let lastMessage;
  let pendingError = null;
  const used = new Set();
  const toolUse = (item) => {
    if (used.has(item.id)) return [];
    used.add(item.id);
    return [compact({ type: 'tool_use', id: item.id, name: toolName(item), input: toolInput(item) })];
  };
  const isTool = (item) => item !== null && typeof item === 'object' && typeof item.type === 'string' && !NOT_TOOLS.has(item.type) && typeof item.id === 'string' && item.id !== '';
  return {
    feed(line) {
      if (finished) return [];
      const events = [];
      switch (line.type) {
        case 'thread.started':
          if (session === null && typeof line.thread_id === 'string' && line.thread_id !== '' && line.thread_id.length <= 512) {
            session = line.thread_id;
            events.push({ type: 'session', session_id: session });
          }
          break;
        case 'item.started':
          if (isTool(line.item)) events.push(...toolUse(line.item));
          break;
        case 'item.completed': {
          const item = line.item ?? {};
          if (item.type === 'agent_message' && typeof item.text === 'string') {
            lastMessage = item.text;
            events.push({ type: 'text', text: item.text });
          } else if (isTool(item)) {
            events.push(...toolUse(item));
            events.push({ type: 'tool_result', id: item.id, is_error: toolFailed(item) });
          }
          break;
        }
        case 'error':
          if (typeof line.message === 'string' && !/^Reconnecting\.\.\./.test(line.message)) pendingError = line.message;
          break;
        case 'turn.completed': {
          finished = true;
          const usage = line.usage ?? {};
          events.push(compact({
            type: 'usage',
            input_tokens: count(usage.input_tokens),
            output_tokens: count(usage.output_tokens),
            cache_read_input_tokens: count(usage.cached_input_tokens),
          }));
          events.push(compact({ type: 'terminal', stop_reason: 'end_turn', result: lastMessage }));
          break;
        }
        case 'turn.failed': {
          finished = true;
          const message = line.error?.message;
          events.push({ type: 'error', message: typeof message === 'string' && message !== '' ? message : (pendingError ?? 'codex reported turn.failed'), code: 'turn.failed' });
          break;
        }
        default:
          break;
      }
      return events;
    },
    end() {
      if (finished || pendingError === null) return [];
      finished = true;
      return [{ type: 'error', message: pendingError, code: 'error' }];
    },
  };
}

/** The CLI's argv for the shim's arguments. */
export function codexArgv(args) {
  const argv = ['exec', '--json', '--skip-git-repo-check'];
  if (args.outputSchema !== null) argv.push('--output-schema', args.outputSchema);
  if (args.resume !== null) argv.push('resume', args.resume);
  argv.push('-');
  return argv;
}
