#!/usr/bin/env bash
# A model calling `Modelica.Math.Vectors.interpolate` on a varying abscissa over a table of N
# entries (its search loop is kept as code): the wall time and peak memory of the whole
# `mocca simulate` command (MSL loaded, 3 s at the default step), best of RUNS, per N.
#
#   cargo build --release && benches/table_search.sh 200 800 3200 12800
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
OUT=$ROOT/target/tmp/table_search
RUNS=${RUNS:-5}
mkdir -p "$OUT"
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(200 800 3200 12800)

printf '%-8s %10s %10s\n' entries "wall s" "peak MB"
for n in "${SIZES[@]}"; do
    model=$OUT/table_$n.mo
    python3 - "$n" >"$model" <<'PY'
import math, sys
n = int(sys.argv[1])
rows = "; ".join(f"{k / 30!r}, {math.sin(k / 30)!r}" for k in range(n))
print(f"""model TableSearch
  parameter Real tab[:, 2] = [{rows}];
  Real x(start = -1, fixed = true);
  Real y;
equation
  der(x) = 1;
  y = Modelica.Math.Vectors.interpolate(tab[:, 1], tab[:, 2], x);
end TableSearch;""")
PY
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f '%e %M' "$MOCCA" simulate "$model" --lib "$ROOT/../shared/msl" \
            --stop 3 --out "$OUT/table_$n.csv" 2>&1 >/dev/null | tail -1
    done | sort -g | head -1 | awk -v n="$n" '{ printf "%-8d %10.2f %10.0f\n", n, $1, $2 / 1024 }'
done
