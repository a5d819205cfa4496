#!/usr/bin/env bash
# CLI wall time for RECORDS real chr20 records of LENGTH bp: the work spread over the key's
# concurrency cap (-j CONCURRENCY) against the same work done one request at a time (-j 1).
# Figures in BENCHMARKS.md ("Clients").
#
#   DNASERVE_URL=... DNASERVE_API_KEY=... clients/python/bench_cli.sh [TASK] [RECORDS] [LENGTH] [CONCURRENCY]
#
# DNASERVE_CLI names the `dnaserve` to run (default: the one on PATH).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
task="${1:-promoter}"
records="${2:-100}"
length="${3:-10000}"
concurrency="${4:-4}"
cli="${DNASERVE_CLI:-dnaserve}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

chr20="$(/usr/bin/python3 "$ROOT/scripts/debian_files.py" vt-examples \
           usr/share/doc/vt/examples/ref/20.fa.gz | tail -n1)"
/usr/bin/python3 "$ROOT/clients/python/tests/chr20_records.py" "$chr20" "$dir/in.fa" \
  --count "$records" --length "$length" --step 100000

"$cli" predict "$task" "$dir/in.fa" -q -j 1 -o "$dir/warm.json" --sync  # load the model first
for j in 1 "$concurrency"; do
  start=$(date +%s.%N)
  "$cli" predict "$task" "$dir/in.fa" -q -j "$j" -o "$dir/out-$j.json" --sync
  end=$(date +%s.%N)
  printf '%s: %d records x %d bp, -j %d: %.1f s\n' "$task" "$records" "$length" "$j" \
    "$(/usr/bin/python3 -c "print($end - $start)")"
done
