#!/usr/bin/env bash
# lockshare.sh BIN PROFILE: the CPU share (of all samples) of sync.Mutex/RWMutex Lock and
# Unlock, protoactor's mailbox queue Push/Pop and channel operations, by calling function,
# largest first: the "no single lock or queue above 2% of CPU". BIN is the binary
# the CPU profile PROFILE came from (e.g. benchmarks/scale built with go build, and
# DIR/cpu-2cores-roundN.pprof of `scale -profiles DIR`).
set -euo pipefail
bin=$1; prof=$2
total=$(go tool pprof -top "$bin" "$prof" 2>/dev/null | awk '/Total samples/ {for(i=1;i<=NF;i++) if($i=="=") print $(i+1)}' | tr -d 's')
echo "total samples: ${total}s"
for f in '^sync.\(\*Mutex\).(Lock|Unlock)$' '^sync.\(\*RWMutex\).(R?Lock|R?Unlock)$' 'goring.\(\*Queue\).(Push|Pop)$' 'mpsc.\(\*Queue\).(Push|Pop)$' 'runtime.(chansend1|selectnbsend|chanrecv1|chanrecv2)$'; do
  go tool pprof -peek "$f" "$bin" "$prof" 2>/dev/null | awk -v F="$f" '
    /^-+\+/ {infn=0; next}
    /\| [^ ]/ {infn=1; next}
    /\|   / && !infn { v=$1; if (v ~ /ms$/) {sub(/ms$/,"",v); v=v/1000} else sub(/s$/,"",v);
       n=$0; sub(/.*\|   /,"",n); sub(/ \(inline\)/,"",n); print v "\t" n "\t" F }'
done | awk -F'\t' -v T="$total" '{s[$2" ["$3"]"]+=$1} END {for (k in s) printf "%6.2f%%  %s\n", 100*s[k]/T, k}' | sort -rn | head -20
