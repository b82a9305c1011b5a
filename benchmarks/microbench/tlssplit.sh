#!/usr/bin/env bash
# tlssplit.sh ROUNDS: an object over several TLS streams (issue 17): the object stream
# between two processes (the benchmark the client, its child process the server), 256 MiB,
# plain TCP against mutual TLS over 1, 2 and 4 streams (FetchOptions.Streams), on
# unlimited loopback. Each round runs the four configurations once, each in a process of
# its own, in rotated order, so that they interleave; it prints every run with the load
# average and then the medians. On a machine with cores to spare at each end, the streams'
# ciphers run on cores of their own; on a 2-vCPU machine one stream already uses both.
#
#   bash benchmarks/microbench/tlssplit.sh 6
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
bin=$(mktemp -d /tmp/tlssplit.XXXXXX)
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/transfer.test" ./objects/transfer
cd objects/transfer # the test binary's working directory (its testdata)
cfgs=('plain$' 'tls/streams=1$' 'tls/streams=2$' 'tls/streams=4$')
for r in $(seq 1 "$rounds"); do
  for j in 0 1 2 3; do
    c=${cfgs[$(( (r + j) % 4 ))]}
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$bin/transfer.test" -test.run '^$' -test.bench "StreamSplit/256MiB/processes/$c" -test.benchtime 4x |
      awk -v load="$load" '/^BenchmarkStreamSplit/ {print $1, $5, "MB/s", $7, "client-cpu-ms", $9, "server-cpu-ms", "load", load}'
  done
done | tee "$bin/runs"
python3 - "$bin/runs" <<'PY'
import sys, statistics as st
rows = {}
for l in open(sys.argv[1]):
    f = l.split()
    rows.setdefault(f[0].split("/processes/")[1].rsplit("-", 1)[0], []).append(float(f[1]))
base = st.median(rows["plain"])
for k, v in rows.items():
    print(f"median {k:14s} {st.median(v):7.0f} MB/s  ÷ plain {st.median(v) / base:.2f}  ({len(v)} runs)")
PY
