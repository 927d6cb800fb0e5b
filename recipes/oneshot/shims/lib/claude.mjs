// Claude Code's stream (`claude -p --output-format stream-json --verbose`) into the normalized
// stream (schemas/oneshot-stream-v1.schema.json).
//
// | Claude Code prints | the shim prints |
// |---|---|
// | `system`/`init` with `session_id` (or the first line carrying one) | `session` |
// | `stream_event` text deltas (only with --include-partial-messages) | `text_delta` |
// | `assistant` message: `text` blocks, `tool_use` blocks | `text`, `tool_use` |
// | `user` message: `tool_result` blocks | `tool_result` |
// | `result` | `usage`, then `terminal` when `subtype` is `success` and `is_error` is not true, else `error` and no terminal |
//
// A `result` ends the turn; lines after it are ignored. `system`/`api_retry` (a retried model
// call) and every other type are not events. With `--json-schema` the final answer is the
// result's `structured_output`, as JSON text.

import { readFileSync } from 'node:fs';
import { compact, count } from './common.mjs';

/** Claude Code's stop reasons as the normalized stream's (ACP's): the turn finished unless
 *  the model ran out of tokens or refused. `tool_use` is how a turn that ended in the
 *  StructuredOutput tool reports itself. */
function stopReason(reason) {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'refusal':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

function errorMessage(result) {
  if (typeof result.result === 'string' && result.result !== '') return result.result;
  if (Array.isArray(result.errors) && result.errors.length > 0) return result.errors.map(String).join('; ');
  return `claude ended the turn with ${result.subtype ?? 'an error'}`;
}

export function claudeTranslator() {
  let session = null;
  let finished = false;
  const sessionEvent = (line) => {
    const id = line.session_id;
    if (session !== null || typeof id !== 'string' || id === '' || id.length > 512) return [];
    session = id;
    return [{ type: 'session', session_id: id }];
  };
  return {
    feed(line) {
      if (finished) return [];
      const events = sessionEvent(line);
      const content = Array.isArray(line.message?.content) ? line.message.content : [];
      switch (line.type) {
        case 'stream_event': {
          const delta = line.event?.delta;
          if (line.event?.type === 'content_block_delta' && delta?.type === 'text_delta' && typeof delta.text === 'string') {
            events.push({ type: 'text_delta', text: delta.text });
          }
          break;
        }
        case 'assistant':
          for (const block of content) {
            if (block?.type === 'text' && typeof block.text === 'string') events.push({ type: 'text', text: block.text });
            else if (block?.type === 'tool_use' && typeof block.id === 'string' && block.id !== '') {
              events.push(compact({ type: 'tool_use', id: block.id, name: typeof block.name === 'string' ? block.name : undefined, input: block.input }));
            }
          }
          break;
        case 'user':
          for (const block of content) {
            if (block?.type === 'tool_result' && typeof block.tool_use_id === 'string' && block.tool_use_id !== '') {
              events.push(compact({ type: 'tool_result', id: block.tool_use_id, is_error: typeof block.is_error === 'boolean' ? block.is_error : undefined }));
            }
          }
          break;
        case 'result': {
          finished = true;
          const usage = line.usage ?? {};
          events.push(compact({
            type: 'usage',
            input_tokens: count(usage.input_tokens),
            output_tokens: count(usage.output_tokens),
            cache_read_input_tokens: count(usage.cache_read_input_tokens),
            cache_creation_input_tokens: count(usage.cache_creation_input_tokens),
          }));
          if (line.is_error === true || line.subtype !== 'success') {
            const code = typeof line.api_error_status === 'number' || typeof line.api_error_status === 'string' ? String(line.api_error_status) : line.subtype;
            events.push(compact({ type: 'error', message: errorMessage(line), code: typeof code === 'string' ? code : undefined }));
          } else {
            const result = line.structured_output !== undefined && line.structured_output !== null
              ? JSON.stringify(line.structured_output)
              : typeof line.result === 'string' ? line.result : undefined;
            events.push(compact({ type: 'terminal', stop_reason: stopReason(line.stop_reason), result }));
          }
          break;
        }
        default:
          break;
      }
      return events;
    },
    end() {
      return [];
    },
  };
}

/** The CLI's argv for the shim's arguments. */
export function claudeArgv(args) {
  const argv = ['-p', '--output-format', 'stream-json', '--verbose'];
  if (args.resume !== null) argv.push('--resume', args.resume);
  if (args.outputSchema !== null) {
    const schema = JSON.parse(readFileSync(args.outputSchema, 'utf8'));
    argv.push('--json-schema', JSON.stringify(schema));
  }
  return argv;
}
