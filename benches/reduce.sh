#!/usr/bin/env bash
# Term-ranking reduction (SPEC §11) on generated RC chains, through the binary:
#
#   cargo build --release && benches/reduce.sh            # 10³, 3·10³, 10⁴ equations
#   benches/reduce.sh 111 1111                             # other chain lengths (stages)
#
# Per chain (9·stages + 6 equations, written to target/tmp/reduce/): both term metrics over
# two instants (`--samples 2`, the least reduce takes), printing the candidate operations, the
# ranking time (`ranking_time_s`: terms, samples, J_F and its factorizations, predictions) and
# the wall time of the whole command (parse, reference run, ranking, applying under the guard).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
OUT=$ROOT/target/tmp/reduce
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(111 333 1111)
mkdir -p "$OUT"
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }

printf '%-10s %-12s %10s %12s %10s\n' equations metric candidates "ranking s" "wall s"
for n in "${STAGES[@]}"; do
    model=$OUT/rc_chain_$n.mo
    python3 "$ROOT/benches/rc_chain.py" "$n" >"$model"
    for metric in statistical onestep; do
        start=$(date +%s.%N)
        "$MOCCA" reduce "$model" --metric "$metric" --samples 2 --stop 1 --format json >"$OUT/out.json"
        end=$(date +%s.%N)
        python3 - "$OUT/out.json" "$((9 * n + 6))" "$metric" "$start" "$end" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-10s %-12s %10d %12.3f %10.2f" % (sys.argv[2], sys.argv[3], len(d["ranking"]),
      d["ranking_time_s"], float(sys.argv[5]) - float(sys.argv[4])))
PY
    done
done
