#!/usr/bin/env bash
# Mixed-mode integration (SPEC §10) against implicit and explicit Euler on the nonlinear heat
# exchanger (examples/heat_exchanger_nonlinear.mo), through the binary:
#
#   cargo build --release && benches/mixed_mode.sh            # N = 100 1000 10000
#   benches/mixed_mode.sh 1000                                # other sizes
#   STEP=0.01 STOP=2 RUNS=5 benches/mixed_mode.sh 100 1000    # another step, stop time, runs
#
# Per N: a BDF reference (--tol 1e-10, output every 0.01 s) written to target/tmp/mixed_mode/,
# then implicit-euler, mixed-euler (--fast 'T_a[*]') and euler at the fixed step, each once
# with --compare for its statistics and RMSE, and RUNS times without (the whole command: parse,
# compile, initialise, integrate; no trajectory recorded) for the wall time, with hyperfine when
# installed (mean ± σ of the command), else the best of RUNS `wall_time_s`. A method that fails
# (explicit Euler diverges at these steps) prints its error instead.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
MODEL=$ROOT/examples/heat_exchanger_nonlinear.mo
OUT=$ROOT/target/tmp/mixed_mode
STEP=${STEP:-0.001}
STOP=${STOP:-2}
RUNS=${RUNS:-5}
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(100 1000 10000)
mkdir -p "$OUT"
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }

# The fields of a `simulate --format json` answer, or its first error.
summary() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
if "stats" not in d:
    e = d["errors"][0]
    print("fails: %s (%s)" % (e["message"], "; ".join(e.get("notes") or [])))
    sys.exit()
s = d["stats"]
print("%d %d %d %d %d %.6f %s" % (s["steps"], s["f_evals"], s["jac_evals"], s["factorizations"],
      s["newton_iters"], s["wall_time_s"], "%.4g" % d["rmse"] if "rmse" in d else "-"))'
}

printf '%-7s %-15s %12s %6s %7s %6s %6s %7s %10s %10s\n' \
    N method wall steps f_evals jac LU newton "µs/step" RMSE
for n in "${SIZES[@]}"; do
    ref=$OUT/ref_$n.csv
    "$MOCCA" simulate "$MODEL" -p N="$n" --method bdf --tol 1e-10 --step 0.01 --stop "$STOP" \
        --out "$ref" --format json >"$OUT/bdf_$n.json"
    for method in implicit-euler mixed-euler euler; do
        args=(simulate "$MODEL" -p N="$n" --method "$method" --step "$STEP" --stop "$STOP" --format json)
        [ "$method" = mixed-euler ] && args+=(--fast 'T_a[*]')
        read -r line < <("$MOCCA" "${args[@]}" --compare "$ref" 2>/dev/null | summary)
        if [[ $line == fails* ]]; then
            printf '%-7s %-15s %s\n' "$n" "$method" "$line"
            continue
        fi
        read -r steps f jac lu newton _ rmse <<<"$line"
        if command -v hyperfine >/dev/null; then
            hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$OUT/hf.json" \
                "$MOCCA ${args[*]}" >/dev/null 2>&1
            wall=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]
print("%.4f±%.4f" % (r["mean"], r["stddev"]))' "$OUT/hf.json")
            mean=${wall%±*}
        else
            mean=$(for _ in $(seq "$RUNS"); do "$MOCCA" "${args[@]}" | summary | cut -d' ' -f6; done | sort -g | head -1)
            wall=$mean
        fi
        per=$(python3 -c "print('%.1f' % (1e6 * $mean / $steps))")
        printf '%-7s %-15s %12s %6s %7s %6s %6s %7s %10s %10s\n' \
            "$n" "$method" "$wall" "$steps" "$f" "$jac" "$lu" "$newton" "$per" "$rmse"
    done
done
