#!/bin/sh
# The smallest ACP agent over stdio: initialize, session/new, and each session/prompt answered
# by asking the model through the endpoint it is given (OPENAI_BASE_URL and OPENAI_API_KEY,
# as the probe and the platform set them), streamed back as one agent message. One JSON-RPC
# message per line. It declares no Checkfu extension (no `checkfu.capabilities`), and refuses a
# session/new that asks for one. A session/cancel stops the model call and answers the prompt `cancelled`,
# as ACP asks. Replace the model call with your own agent.
field() { sed -n "s/.*\"$1\":\"\\(\\([^\"\\\\]\\|\\\\.\\)*\\)\".*/\\1/p"; }
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$1" "$2"; }
state="${TMPDIR:-/tmp}/acp-agent.$$"
mkdir -p "$state"
trap 'rm -rf "$state"' EXIT
# One turn, run beside the read loop so that a cancel can stop it: the model call, its answer
# as a message, the stop reason, then a mark that the turn has answered.
turn() {
  wget -q -Y off -O "$state/answer" --header 'Content-Type: application/json' \
    --header "Authorization: Bearer ${OPENAI_API_KEY:-}" \
    --post-data "{\"model\":\"checkfu-acp\",\"messages\":[{\"role\":\"user\",\"content\":\"$2\"}]}" \
    "${OPENAI_BASE_URL:-http://127.0.0.1}/chat/completions" &
  echo $! > "$state/call"
  wait $! || : > "$state/answer"
  answer=$(field content < "$state/answer")
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}\n' "$3" "$answer"
  reply "$1" '{"stopReason":"end_turn"}'
  : > "$state/answered.$1"
}
sessions=0
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  method=$(printf '%s' "$line" | field method)
  case "$method" in
    initialize) reply "$id" '{"protocolVersion":1,"agentCapabilities":{},"authMethods":[],"agentInfo":{"name":"acp-agent","version":"0.1.0"}}' ;;
    session/new)
      # It serves none of Checkfu's session members (built-in tools, continuity, resume state,
      # runtime config, output schema): a session that asks for one is refused, as authority
      # is fail-closed. Declare and serve one before you take it.
      member=$(printf '%s' "$line" | sed -n 's/.*"\(checkfu\.[a-z_]*\)".*/\1/p')
      if [ -n "$member" ]; then
        printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"%s is not served by this agent"}}\n' "$id" "$member"
      else
        # Each session an id of its own.
        sessions=$((sessions + 1))
        reply "$id" "{\"sessionId\":\"s-$sessions\"}"
      fi ;;
    session/prompt)
      turn "$id" "$(printf '%s' "$line" | field text)" "$(printf '%s' "$line" | field sessionId)" &
      turn_pid=$! turn_id=$id ;;
    session/cancel)
      # Stop the turn, then its model call; answer `cancelled` unless the turn had answered.
      if [ -n "${turn_pid:-}" ]; then
        kill "$turn_pid" 2>/dev/null
        wait "$turn_pid" 2>/dev/null
        [ -s "$state/call" ] && kill "$(cat "$state/call")" 2>/dev/null
        [ -e "$state/answered.$turn_id" ] || reply "$turn_id" '{"stopReason":"cancelled"}'
        turn_pid=
      fi ;;
    *) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id" ;;
  esac
done
