#!/bin/sh
# The smallest ACP agent over stdio: initialize, session/new, and each session/prompt answered
# by asking the model through the endpoint it is given (OPENAI_BASE_URL and OPENAI_API_KEY,
# as the probe and the platform set them), streamed back as one agent message. One JSON-RPC
# message per line. Replace the model call with your own agent.
field() { sed -n "s/.*\"$1\":\"\\(\\([^\"\\\\]\\|\\\\.\\)*\\)\".*/\\1/p"; }
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$1" "$2"; }
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  method=$(printf '%s' "$line" | field method)
  case "$method" in
    initialize) reply "$id" '{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}' ;;
    session/new) reply "$id" '{"sessionId":"s-1"}' ;;
    session/prompt)
      prompt=$(printf '%s' "$line" | field text)
      response=$(wget -q -Y off -O - --header 'Content-Type: application/json' \
        --header "Authorization: Bearer ${OPENAI_API_KEY:-}" \
        --post-data "{\"model\":\"checkfu-acp\",\"messages\":[{\"role\":\"user\",\"content\":\"$prompt\"}]}" \
        "${OPENAI_BASE_URL:-http://127.0.0.1}/chat/completions") || response=
      answer=$(printf '%s' "$response" | field content)
      printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}\n' "$answer"
      reply "$id" '{"stopReason":"end_turn"}' ;;
    *) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id" ;;
  esac
done
