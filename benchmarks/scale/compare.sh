#!/usr/bin/env bash
# compare.sh OLD NEW [ROUNDS]: interleaved runs of two microbenchmark binaries (built from two
# commits with `go build -o X ./benchmarks/microbench`), each pinned to 1 core and to 2
# (taskset, GOMAXPROCS to match), ROUNDS times (default 5), then the medians per binary, core
# count and metric. On a noisy machine only interleaved rounds compare two versions fairly.
set -euo pipefail
old=$1 new=$2 rounds=${3:-5}
re=${RE:-'^(single_client_tasks_sync|single_client_tasks_async|multi_client_tasks_async|n_n_actor_calls_async|1_n_actor_calls_async)$'}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for bin in "$old" "$new"; do
    for cpus in 0 0,1; do
      n=$(echo "$cpus" | tr ',' '\n' | wc -l)
      GOMAXPROCS=$n taskset -c "$cpus" "$bin" -quick -only "$re" 2>&1 |
        awk -v b="$bin" -v n="$n" '/^microbench: [a-z0-9_]+ +[0-9]/ {print b, n, $2, $3}' >>"$out"
    done
  done
done
awk '{k=$1" "$3" "$2; v[k]=v[k]" "$4} END {for (k in v) print k, v[k]}' "$out" | sort |
  while read -r bin metric n vals; do
    med=$(echo "$vals" | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
    printf '%-40s %-34s %s core(s) %12.0f\n' "$bin" "$metric" "$n" "$med"
  done
