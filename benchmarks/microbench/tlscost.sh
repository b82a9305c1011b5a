#!/usr/bin/env bash
# tlscost.sh ROUNDS: what mutual TLS between nodes costs (issue 17), against --insecure as
# the same-run baseline. Each round starts a fresh two-agent cluster on 127.0.0.1 (head and
# one more agent, 2 CPUs each) once with security on (the default) and once with
# --insecure, in alternating order, runs the cross-node microbenchmarks
# (cross_node_tasks_async, cross_node_object_transfer_gigabytes) with the microbench binary
# as the driver, and stops the cluster. It prints one line per run and the medians.
#
#   bash benchmarks/microbench/tlscost.sh 5
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
umask 077 # the token file must be private (rayctl refuses it otherwise)
bin=$(mktemp -d /tmp/tlscost.XXXXXX)
cleanup() {
  for s in "$bin"/s-*/b "$bin"/s-*; do
    [ -d "$s" ] && "$bin/rayctl" stop --force --session-dir "$s" >/dev/null 2>&1 || true
  done
  rm -rf "$bin"
}
trap cleanup EXIT
go build -o "$bin/rayctl" ./cli/rayctl
go build -o "$bin/microbench" ./benchmarks/microbench
port=${PORT:-26431}

one() { # one MODE: prints "MODE tasks/s GB/s"
  local mode=$1 sess="$bin/s-$1" flags=() env=()
  [ "$mode" = insecure ] && flags=(--insecure) && env=(RAY_GO_INSECURE=1)
  rm -rf "$sess"
  "$bin/rayctl" start --head --port "$port" --num-cpus 2 --session-dir "$sess" "${flags[@]}" >/dev/null
  if [ "$mode" = tls ]; then
    "$bin/rayctl" token show --session-dir "$sess" > "$sess/token"
    flags=(--token-file "$sess/token"); env=(RAY_GO_TOKEN_FILE="$sess/token")
  fi
  "$bin/rayctl" start --address 127.0.0.1:$port --num-cpus 2 --session-dir "$sess/b" "${flags[@]}" >/dev/null
  local out
  out=$(env "${env[@]}" RAY_ADDRESS=127.0.0.1:$port "$bin/microbench" -address 127.0.0.1:$port -json -only 'cross_node' 2>/dev/null || true)
  "$bin/rayctl" stop --session-dir "$sess/b" >/dev/null 2>&1 || true
  "$bin/rayctl" stop --session-dir "$sess" >/dev/null 2>&1 || true
  python3 -c '
import json,sys
d=json.loads(sys.argv[2])
print(sys.argv[1], round(d["cross_node_tasks_async"]["mean"]), round(d["cross_node_object_transfer_gigabytes"]["mean"],3))
' "$mode" "$out"
}

results=$(mktemp)
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="tls insecure"; else order="insecure tls"; fi
  for m in $order; do
    line=$(one "$m"); echo "round $r: $line"; echo "$line" >> "$results"
  done
done
python3 - "$results" <<'PY'
import sys,statistics as st
rows=[l.split() for l in open(sys.argv[1]) if l.strip()]
med={}
for m in ("tls","insecure"):
    t=[float(r[1]) for r in rows if r[0]==m]; g=[float(r[2]) for r in rows if r[0]==m]
    med[m]=(st.median(t),st.median(g))
    print(f"{m:9s} cross_node_tasks_async median {med[m][0]:,.0f}/s  cross_node_object_transfer_gigabytes median {med[m][1]:.3f} GB/s")
print(f"tls/insecure: tasks {med['tls'][0]/med['insecure'][0]:.2f}, transfer {med['tls'][1]/med['insecure'][1]:.2f}")
PY
rm -f "$results"
