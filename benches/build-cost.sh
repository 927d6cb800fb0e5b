#!/usr/bin/env bash
# What the runtime costs to build, as ratios measured side by side on this machine.
#
#   benches/build-cost.sh [pair|rebuild|all]   (default: all; ROUNDS=2 pairs)
#   benches/build-cost.sh versus REV           (ROUNDS=2 pairs)
#
# pair:    clean release builds, back to back in one run, of three crates that decode the
#          same line of recorded SDK traffic (a `session/update` tool call):
#          - examples/downstream: depends on checkfu-wire with `default-features = false`
#            and decodes the line with the runtime's decoder;
#          - serde-baseline, a scratch crate depending only on serde (derive) and
#            serde_json, that parses it into derived structs;
#          - acp-official, a scratch crate depending on `agent-client-protocol-schema` (the
#            official types, the version the root Cargo.toml's dev-dependencies name, as
#            benches/decode.rs measures them), that parses it into `SessionNotification`;
#          each into its own empty target directory, ROUNDS times; prints wall time, CPU
#          time and the number of crates compiled, and per round the dependent's ratios
#          to the other two (issue 28's goal: at most the official crate's time, at most
#          3x the serde crate's).
# rebuild: edit -> rebuild with regeneration on, in this checkout: after a warm
#          `cargo build`, one catalog value changes (a harness ceiling's
#          multiagent_shared_environment, false -> true) and `cargo build` is timed;
#          then the catalog is restored and that rebuild is timed too. The catalog is
#          restored on any exit.
#
# versus:  clean release builds, alternating in one run, of examples/downstream as this
#          checkout has it and as git revision REV had it (a worktree of REV in a scratch
#          directory), ROUNDS times, with this checkout's ratio to REV: what a change cost a
#          dependent (issue 54: a dependent reading v1 alone pays nothing for v2).
#
# Not run by CI (it is a measurement, not a check). The dependent and the serde crate use
# the versions pinned in examples/downstream/Cargo.lock, so the crates they share (serde,
# serde_json, ...) are the same; the official crate uses the root Cargo.lock, which pins the
# official crate and its dependencies for benches/decode.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
mode="${1:-all}"
rounds="${ROUNDS:-2}"
work="$(mktemp -d)"
catalog=catalog/catalog.toml
restore_catalog=false
cleanup() {
  if $restore_catalog; then cp "$work/catalog.toml" "$catalog"; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The baseline crate: the same line, found the same way, into derived structs.
baseline="$work/serde-baseline"
mkdir -p "$baseline/src"
cat >"$baseline/Cargo.toml" <<'EOF'
[package]
name = "serde-baseline"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
EOF
cp examples/downstream/Cargo.lock "$baseline/Cargo.lock"
cat >"$baseline/src/main.rs" <<EOF
use serde::Deserialize;

const TRAFFIC: &str = include_str!("$root/tests/data/sdk-traffic/ts-turn.agent_to_client.jsonl");
const MARKER: &str = r#""sessionUpdate":"tool_call","#;

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Notification { jsonrpc: String, method: String, params: Params }

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Params { session_id: String, update: Update }

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Update {
    session_update: String,
    tool_call_id: String,
    title: String,
    kind: String,
    status: String,
    locations: Vec<Location>,
    raw_input: serde_json::Value,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Location { path: String, line: Option<u64> }

fn main() {
    let line = TRAFFIC.lines().find(|l| l.contains(MARKER)).expect("the line");
    match serde_json::from_str::<Notification>(line) {
        Ok(n) => println!("{n:?}"),
        Err(e) => { eprintln!("error: {e}"); std::process::exit(1); }
    }
}
EOF

# The official types' crate: the same line, into the official `SessionNotification`.
acp_version="$(sed -n 's/^agent-client-protocol-schema = "\([^"]*\)".*/\1/p' Cargo.toml)"
if [ -z "$acp_version" ]; then echo "error: no agent-client-protocol-schema in Cargo.toml" >&2; exit 1; fi
official="$work/acp-official"
mkdir -p "$official/src"
cat >"$official/Cargo.toml" <<EOF
[package]
name = "acp-official"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
agent-client-protocol-schema = "$acp_version"
serde_json = "1"
EOF
cp Cargo.lock "$official/Cargo.lock"
cat >"$official/src/main.rs" <<EOF
use agent_client_protocol_schema::v1::SessionNotification;

const TRAFFIC: &str = include_str!("$root/tests/data/sdk-traffic/ts-turn.agent_to_client.jsonl");
const MARKER: &str = r#""sessionUpdate":"tool_call","#;

fn main() {
    let line = TRAFFIC.lines().find(|l| l.contains(MARKER)).expect("the line");
    let mut message: serde_json::Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => { eprintln!("error: {e}"); std::process::exit(1); }
    };
    if message["method"] != "session/update" {
        eprintln!("error: not a session/update");
        std::process::exit(1);
    }
    match serde_json::from_value::<SessionNotification>(message["params"].take()) {
        Ok(n) => println!("{n:?}"),
        Err(e) => { eprintln!("error: {e}"); std::process::exit(1); }
    }
}
EOF

# clean_build NAME MANIFEST: prints "NAME wall_s cpu_s crates" and checks the binary runs.
clean_build() {
  local name="$1" manifest="$2" target="$work/target-$1" log="$work/$1.log" times="$work/$1.time"
  rm -rf "$target"
  local start end
  start="$(date +%s.%N)"
  TIMEFORMAT='%U %S'
  { time cargo build --release --manifest-path "$manifest" --target-dir "$target" 2>"$log" >/dev/null; } 2>"$times" \
    || { cat "$log"; echo "error: $name did not build" >&2; exit 1; }
  end="$(date +%s.%N)"
  # One `Compiling` line per package built (build scripts and proc macros included).
  local crates
  crates="$(grep -c '^ *Compiling ' "$log")"
  "$target/release/$name" >/dev/null || { echo "error: $name built but did not run" >&2; exit 1; }
  read -r user sys <"$times"
  awk -v n="$name" -v s="$start" -v e="$end" -v u="$user" -v y="$sys" -v c="$crates" 'BEGIN { printf "%s %.1f %.1f %s\n", n, e - s, u + y, c }'
}

pair() {
  echo "# clean release builds, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at start; $(cargo --version)"
  echo "# round  crate                     wall_s  cpu_s  crates"
  for round in $(seq 1 "$rounds"); do
    read -r _ down_wall down_cpu down_crates < <(clean_build checkfu-wire-downstream examples/downstream/Cargo.toml)
    read -r _ base_wall base_cpu base_crates < <(clean_build serde-baseline "$baseline/Cargo.toml")
    read -r _ acp_wall acp_cpu acp_crates < <(clean_build acp-official "$official/Cargo.toml")
    printf '  %-5s  %-24s  %6s  %5s  %s\n' "$round" checkfu-wire-downstream "$down_wall" "$down_cpu" "$down_crates"
    printf '  %-5s  %-24s  %6s  %5s  %s\n' "$round" serde-baseline "$base_wall" "$base_cpu" "$base_crates"
    printf '  %-5s  %-24s  %6s  %5s  %s\n' "$round" acp-official "$acp_wall" "$acp_cpu" "$acp_crates"
    awk -v r="$round" -v dw="$down_wall" -v dc="$down_cpu" -v bw="$base_wall" -v bc="$base_cpu" -v aw="$acp_wall" -v ac="$acp_cpu" \
      'BEGIN {
        printf "  %-5s  ratio downstream/serde-baseline: wall %.2fx, cpu %.2fx (goal <= 3x)\n", r, dw / bw, dc / bc
        printf "  %-5s  ratio downstream/acp-official:   wall %.2fx, cpu %.2fx (goal <= 1x)\n", r, dw / aw, dc / ac
      }'
  done
}

# timed_build: wall seconds of `cargo build` in this checkout.
timed_build() {
  local start end
  start="$(date +%s.%N)"
  cargo build --quiet 2>"$work/rebuild.log" || { cat "$work/rebuild.log"; exit 1; }
  end="$(date +%s.%N)"
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }'
}

rebuild() {
  echo "# edit -> rebuild with regeneration on (cargo build, dev profile), load $(cut -d' ' -f1-3 /proc/loadavg)"
  cargo build --quiet 2>/dev/null
  cp "$catalog" "$work/catalog.toml"
  restore_catalog=true
  sed -i '0,/multiagent_shared_environment = "false"/s//multiagent_shared_environment = "true"/' "$catalog"
  if cmp -s "$catalog" "$work/catalog.toml"; then echo "error: the catalog edit changed nothing" >&2; exit 1; fi
  echo "  one catalog value changed:   $(timed_build) s"
  cp "$work/catalog.toml" "$catalog"
  restore_catalog=false
  echo "  and changed back:            $(timed_build) s"
}

# versus REV: the dependent here against the dependent at REV, alternating.
versus() {
  local rev="$1"
  # Global: the exit trap removes the worktree after this function has returned.
  old="$work/versus"
  git worktree add --quiet --detach "$old" "$rev"
  trap 'git worktree remove --force "$old"; cleanup' EXIT
  echo "# the dependent, clean release builds, here ($(git rev-parse --short HEAD)) and at $(git -C "$old" rev-parse --short HEAD)"
  echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at start; $(cargo --version)"
  echo "# round  checkout  wall_s  cpu_s  crates"
  for round in $(seq 1 "$rounds"); do
    read -r _ new_wall new_cpu new_crates < <(clean_build checkfu-wire-downstream examples/downstream/Cargo.toml)
    read -r _ old_wall old_cpu old_crates < <(clean_build checkfu-wire-downstream "$old/examples/downstream/Cargo.toml")
    printf '  %-5s  %-8s  %6s  %5s  %s\n' "$round" here "$new_wall" "$new_cpu" "$new_crates"
    printf '  %-5s  %-8s  %6s  %5s  %s\n' "$round" "$rev" "$old_wall" "$old_cpu" "$old_crates"
    awk -v r="$round" -v nw="$new_wall" -v nc="$new_cpu" -v ow="$old_wall" -v oc="$old_cpu" \
      'BEGIN { printf "  %-5s  ratio here/then: wall %.2fx, cpu %.2fx\n", r, nw / ow, nc / oc }'
  done
}

case "$mode" in
  pair) pair ;;
  versus) [ -n "${2:-}" ] || { echo "usage: $0 versus REV" >&2; exit 2; }; versus "$2" ;;
  rebuild) rebuild ;;
  all) pair; rebuild ;;
  *) echo "usage: $0 [pair|rebuild|all] | versus REV" >&2; exit 2 ;;
esac
