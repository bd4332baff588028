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

# An RC chain of `stages` resistor–capacitor stages joined by `connect`, as mocca::generate
# writes them for the scaling benchmarks.
chain() {
    python3 - "$1" <<'PY'
import sys
n = int(sys.argv[1])
print("""connector Pin Real v; flow Real i; end Pin;
model Resistor Pin p, n; parameter Real R = 1; equation p.v - n.v = R*p.i; p.i + n.i = 0; end Resistor;
model Capacitor Pin p, n; Real v(start = 0); parameter Real C = 1;
equation v = p.v - n.v; C*der(v) = p.i; p.i + n.i = 0; end Capacitor;
model Ground Pin p; equation p.v = 0; end Ground;
model Source Pin p, n; equation p.v - n.v = 1; p.i + n.i = 0; end Source;
model RCChain
  Source source;
  Ground ground;""")
for k in range(1, n + 1):
    print(f"  Resistor R{k}; Capacitor C{k};")
print("equation\n  connect(source.p, R1.p);\n  connect(source.n, ground.p);")
for k in range(1, n + 1):
    print(f"  connect(R{k}.n, C{k}.p);\n  connect(C{k}.n, ground.p);")
    if k < n:
        print(f"  connect(C{k}.p, R{k + 1}.p);")
print("end RCChain;")
PY
}

printf '%-10s %-12s %10s %12s %10s\n' equations metric candidates "ranking s" "wall s"
for n in "${STAGES[@]}"; do
    model=$OUT/rc_chain_$n.mo
    chain "$n" >"$model"
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
