#!/bin/sh
# The smallest oneshot-v1 CLI: one prompt in, the normalized stream out, one turn, exit.
# It asks the model through the endpoint it is given (OPENAI_BASE_URL and OPENAI_API_KEY, as
# the probe and the platform set them) and keeps each turn under $HOME/.checkfu-oneshot so
# that --resume continues the conversation. Replace the model call with your own harness.
set -eu
mode=text prompt_path= resume= schema=
while [ $# -gt 0 ]; do
  case "$1" in
    --output-mode) mode=$2; shift 2 ;;
    --prompt-path) prompt_path=$2; shift 2 ;;
    --resume) resume=1; shift ;;
    --output-schema) schema=$2; shift 2 ;;
    *) echo "checkfu-oneshot: unknown argument $1" >&2; exit 2 ;;
  esac
done
# A JSON string's content: quotes, backslashes and line ends made plain.
text() { tr '\n\r\t"\\' '     '; }
if [ -n "$prompt_path" ]; then prompt=$(text < "$prompt_path"); else prompt=$(text); fi
state=${HOME:-/tmp}/.checkfu-oneshot
mkdir -p "$state"
messages=
if [ -n "$resume" ] && [ -f "$state/turns" ]; then messages="$(cat "$state/turns"),"; fi
messages="$messages{\"role\":\"user\",\"content\":\"$prompt\"}"
format=
if [ -n "$schema" ]; then
  format=",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"output\",\"schema\":$(tr '\n' ' ' < "$schema")}}"
fi
response=$(wget -q -Y off -O - --header 'Content-Type: application/json' \
  --header "Authorization: Bearer ${OPENAI_API_KEY:-}" \
  --post-data "{\"model\":\"checkfu-oneshot\",\"messages\":[$messages]$format}" \
  "${OPENAI_BASE_URL:-http://127.0.0.1}/chat/completions") || {
  [ "$mode" = stream_json ] && echo '{"type":"error","message":"the model call failed"}'
  echo "checkfu-oneshot: the model call failed" >&2; exit 1; }
# The answer, still escaped as the response wrote it, so it drops into JSON as it is.
answer=$(printf '%s' "$response" | sed -n 's/.*"content":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
printf '%s,{"role":"assistant","content":"%s"}' "$messages" "$answer" > "$state/turns"
session=$(cat "$state/session" 2>/dev/null || true)
if [ -z "$session" ]; then session="s-$$-$(date +%s)"; echo "$session" > "$state/session"; fi
if [ "$mode" = stream_json ]; then
  printf '{"type":"session","session_id":"%s"}\n' "$session"
  printf '{"type":"text","text":"%s"}\n' "$answer"
  printf '{"type":"terminal","stop_reason":"end_turn","result":"%s"}\n' "$answer"
else
  printf '%b\n' "$answer"
fi
