#!/usr/bin/env bash
# tlsprof.sh MODE OUT: where a cross-node object transfer's CPU goes, in every process at
# once (the driver, both agents' worker processes, the kernel's copies): starts a fresh
# two-agent cluster on 127.0.0.1 as tlscost.sh does, secure (MODE tls) or --insecure,
# runs cross_node_object_transfer_gigabytes with the microbench binary as the driver, and
# records `perf record -a -g` for 5 s of its trials into OUT.data (root, or
# kernel.perf_event_paranoid <= -1). Read it with `perf report -i OUT.data --sort pid,sym`.
# No code change: Go's frame pointers give perf the call chains.
#
#   sudo bash benchmarks/microbench/tlsprof.sh tls /tmp/tls && sudo bash benchmarks/microbench/tlsprof.sh insecure /tmp/plain
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=$1 out=$2
umask 077
bin=$(mktemp -d /tmp/tlsprof.XXXXXX)
sess="$bin/s"
cleanup() {
  for s in "$sess/b" "$sess"; do
    [ -d "$s" ] && "$bin/rayctl" stop --force --session-dir "$s" >/dev/null 2>&1 || true
  done
  rm -rf "$bin"
}
trap cleanup EXIT
go build -o "$bin/rayctl" ./cli/rayctl
go build -o "$bin/microbench" ./benchmarks/microbench
port=${PORT:-26441}
flags=() env=()
[ "$mode" = insecure ] && flags=(--insecure) && env=(RAY_GO_INSECURE=1)
"$bin/rayctl" start --head --port "$port" --num-cpus 2 --session-dir "$sess" "${flags[@]}" >/dev/null
if [ "$mode" = tls ]; then
  "$bin/rayctl" token show --session-dir "$sess" > "$sess/token"
  flags=(--token-file "$sess/token"); env=(RAY_GO_TOKEN_FILE="$sess/token")
fi
"$bin/rayctl" start --address 127.0.0.1:$port --num-cpus 2 --session-dir "$sess/b" "${flags[@]}" >/dev/null
# Set-up (ray.Init, making the 200 MiB object) takes a few seconds: record after it.
env "${env[@]}" RAY_ADDRESS=127.0.0.1:$port "$bin/microbench" -address 127.0.0.1:$port -json \
  -only 'cross_node_object_transfer' -warmup 4s -trials 3 -trial 2s 2>/dev/null > "$out.json" &
mb=$!
sleep 6.5
perf record -a -g -F 2000 -o "$out.data" -- sleep 5 >/dev/null 2>&1
wait $mb
cat "$out.json"
"$bin/rayctl" stop --session-dir "$sess/b" >/dev/null 2>&1 || true
"$bin/rayctl" stop --session-dir "$sess" >/dev/null 2>&1 || true
