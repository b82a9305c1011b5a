#!/usr/bin/env bash
# tlsmachines.sh RATE ROUNDS: the object stream between two processes, plain TCP against
# mutual TLS (issue 17), as between two one-core machines: the client (the benchmark) on
# CPU 0 and the server (its child process) on CPU 1, GOMAXPROCS=1 each, loopback limited to
# RATE (a tc rate such as 10gbit, or "none") by a tbf qdisc for the run. Needs root (tc,
# taskset of another process) and two CPUs.
#
#   sudo bash benchmarks/microbench/tlsmachines.sh 10gbit 2
set -u
cd "$(dirname "$0")/../.."
rate=${1:?usage: tlsmachines.sh RATE ROUNDS}
rounds=${2:-2}
bin=$(mktemp -d /tmp/tlsmachines.XXXXXX)
go test -c -o "$bin/transfer.test" ./objects/transfer || exit 1
watch=
cleanup() {
  [ "$rate" != none ] && tc qdisc del dev lo root 2>/dev/null
  [ -n "$watch" ] && kill "$watch" 2>/dev/null
  rm -rf "$bin"
}
trap cleanup EXIT
if [ "$rate" != none ]; then
  tc qdisc add dev lo root tbf rate "$rate" burst 4mb latency 20ms || exit 1
fi
# The server child runs the same binary with -test.run=^$ alone: move it to CPU 1.
( while :; do
    for p in $(ps -eo pid=,args= | awk '$2 ~ /transfer.test$/ && $3 == "-test.run=^$" {print $1}'); do
      taskset -a -p -c 1 "$p" >/dev/null 2>&1
    done
    sleep 0.02
  done ) &
watch=$!
for _ in $(seq "$rounds"); do
  GOMAXPROCS=1 taskset -c 0 "$bin/transfer.test" -test.run '^$' -test.bench 'Stream/200MiB/processes' -test.benchtime 6x 2>&1 |
    grep -E '^BenchmarkStream/200MiB/processes(/tls)?[ \t-]'
done
