#!/usr/bin/env bash
# clustercmp.sh REV_A REV_B ROUNDS [REGEXP]: the cluster-mode microbenchmarks of two
# revisions, alternated (the order swapped every round). Each run starts a fresh secure
# cluster on 127.0.0.1 (head and one more agent, 2 CPUs each, the token from a 0600 file),
# runs the microbench of that revision as a driver (`-address`, full-length trials, metrics
# matching REGEXP), and stops the cluster. It prints one JSON object per run.
#
#   bash benchmarks/microbench/clustercmp.sh 1de96ea gcsauth 3 '^(cross_node_tasks_async|1_1_actor_calls_async_exactly_once)$'
set -uo pipefail
cd "$(dirname "$0")/../.."
a=$1 b=$2 rounds=${3:-3} re=${4:-'^(cross_node_tasks_async|1_1_actor_calls_async_exactly_once)$'}
umask 077
dir=$(mktemp -d /tmp/clustercmp.XXXXXX)
port=${PORT:-27731}
cleanup() {
  for s in "$dir"/s-*/b "$dir"/s-*; do
    [ -d "$s" ] && "$dir/A/rayctl" stop --force --session-dir "$s" >/dev/null 2>&1 || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
for side in A B; do
  rev=$a; [ "$side" = B ] && rev=$b
  mkdir -p "$dir/src-$side" "$dir/$side"
  git archive "$rev" | tar -x -C "$dir/src-$side"
  (cd "$dir/src-$side" && go build -o "$dir/$side/rayctl" ./cli/rayctl && go build -o "$dir/$side/microbench" ./benchmarks/microbench) || exit 1
done
one() {
  local side=$1 bin=$dir/$1 sess=$dir/s-$1
  rm -rf "$sess"
  "$bin/rayctl" start --head --port "$port" --num-cpus 2 --session-dir "$sess" --dashboard-port -1 --metrics-port -1 >/dev/null 2>&1
  "$bin/rayctl" token show --session-dir "$sess" > "$dir/token-$side"
  "$bin/rayctl" start --address 127.0.0.1:$port --num-cpus 2 --session-dir "$sess/b" --token-file "$dir/token-$side" --metrics-port -1 >/dev/null 2>&1
  local out
  out=$(RAY_GO_TOKEN_FILE="$dir/token-$side" timeout 600 "$bin/microbench" -address 127.0.0.1:$port -json -only "$re" 2>/dev/null | tr -d '\n' || true)
  "$bin/rayctl" stop --session-dir "$sess/b" >/dev/null 2>&1 || true
  "$bin/rayctl" stop --session-dir "$sess" >/dev/null 2>&1 || true
  echo "{\"round\": $2, \"rev\": \"$(if [ "$side" = A ]; then echo "$a"; else echo "$b"; fi)\", \"load\": $(cut -d' ' -f1 /proc/loadavg), \"metrics\": ${out:-null}}"
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for s in $order; do one "$s" "$r"; done
done
