#!/usr/bin/env bash
# Emitted solvers (SPEC §12) against `mocca simulate`, through the binaries:
#
#   cargo build --release && benches/emit.sh speed     # heat exchangers at N = 1000
#   benches/emit.sh threads 1000 1400 2000            # one thread against two, by size
#   benches/emit.sh build 111 1111 11111               # emit + build of RC chains (10³–10⁵ eqs)
#   benches/emit.sh events                             # state events: the relay heat exchanger
#   benches/emit.sh msl-events                         # MSL examples with events
#   benches/emit.sh clocked                            # a 1 kHz clocked controller, 100 s
#   benches/emit.sh functions                          # 1 000 cube roots kept as code
#
# speed: the linear and the nonlinear heat exchanger (examples/, N = 1000, --step 0.01,
# --stop 2) with implicit-euler and with mixed-euler --partition auto: the integration time of
# `simulate` (its `integration_time_s`, nothing recorded) and of the emitted binary (its
# `integration_time_s`), best of RUNS, as steps per second, the real-time factor and the ratio.
# threads: the nonlinear heat exchanger with N cells, implicit Euler, --stop 20: steps per
# second of `simulate` and of the emitted binary with `--threads 1` and `--threads 2`.
# build: per chain (written to target/tmp/emit/), the wall time of `mocca emit` and of
# `cargo build --release --offline` of the crate (a fresh target directory), and the build's
# peak resident memory (/usr/bin/time).
# events: the relay-controlled heat exchanger (examples/heat_exchanger_relay.mo, N = 1000,
# implicit Euler, --step 0.01, --stop 2, a state event every two steps): `simulate`'s
# integration time, and the emitted binary's with `--events locate` and `--events step`, best
# of RUNS, with the binary's median and largest wall time of one step (of the fastest run).
# msl-events: three MSL examples with events (clutches that stick and slide, a thyristor
# bridge, a switched-capacitor filter clocked by `sample`), implicit Euler at their output
# interval: `simulate`'s integration time and the emitted binary's (`--events locate`).
# clocked: benches/clocked_controller.mo (a PI controller on Clock(0.001) around a motor,
# 100 s, implicit Euler at the clock's period, `--events step`): `simulate`'s integration
# time and the emitted binary's, best of RUNS, its real-time factor, and the binary's median
# and largest wall time of one step.
# functions: benches/cube_roots.mo (1 000 states, each derivative a Newton cube root:
# `CubeRoots` in a `while` loop kept as code, `CubeRootsUnrolled` in six inlined `for` turns),
# implicit Euler and Heun, --step 0.01, --stop 20: `simulate`'s integration time of both forms
# and the emitted binary's of the kept one, best of RUNS, with the two ratios.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
OUT=$ROOT/target/tmp/emit
RUNS=${RUNS:-5}
mkdir -p "$OUT"
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }
what=${1:-speed}
shift || true

best() { # the smallest of the numbers on stdin
    sort -g | head -1
}

# Emits the model the remaining arguments name (a file, or `--lib … --model …`) with them
# into $OUT/$1, builds it and keeps the binary as $OUT/$1.bin; prints the binary's path.
emitted_binary() {
    local name=$1
    shift
    local dir=$OUT/$name
    "$MOCCA" emit "$@" --out "$dir" --force >/dev/null
    (cd "$dir" && CARGO_TARGET_DIR=$OUT/target cargo build --release --offline -q)
    local bin
    bin=$(grep -A1 '\[\[bin\]\]' "$dir/Cargo.toml" | sed -n 's/name = "\(.*\)"/\1/p')
    cp "$OUT/target/release/$bin" "$dir.bin"
    echo "$dir.bin"
}

# The best of RUNS integration times of a command printing JSON (`$1`: the key's path).
best_time() {
    local key=$1
    shift
    for _ in $(seq "$RUNS"); do
        "$@" --format json | python3 -c "import json,sys; print(json.load(sys.stdin)$key)"
    done | best
}

speed() {
    local example=$1 method=$2
    shift 2
    local args=(-p N=1000 --method "$method" --step 0.01 --stop 2 "$@")
    local bin sim emitted
    bin=$(emitted_binary "${example}_$method" "$ROOT/examples/$example.mo" "${args[@]}")
    sim=$(best_time '["stats"]["integration_time_s"]' \
        "$MOCCA" simulate "$ROOT/examples/$example.mo" "${args[@]}")
    emitted=$(best_time '["integration_time_s"]' "$bin")
    python3 - "$example" "$method $*" "$sim" "$emitted" <<'PY'
import sys
name, method, sim, emitted = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
steps = 200
print("%-26s %-34s %12.0f %12.0f %8.1f %8.1f %6.2f" % (name, method, steps / sim, steps / emitted,
      2 / sim, 2 / emitted, sim / emitted))
PY
}

# The nonlinear heat exchanger with N cells, implicit Euler, --stop 20: simulate, and the
# emitted binary on one thread and on two (its Newton matrix in pieces from 4 096 states).
threads() {
    local n=$1
    local args=(-p "N=$n" --method implicit-euler --step 0.01 --stop 20)
    local bin sim one two
    bin=$(emitted_binary "threads_$n" "$ROOT/examples/heat_exchanger_nonlinear.mo" "${args[@]}")
    sim=$(best_time '["stats"]["integration_time_s"]' \
        "$MOCCA" simulate "$ROOT/examples/heat_exchanger_nonlinear.mo" "${args[@]}")
    one=$(best_time '["integration_time_s"]' "$bin" --threads 1)
    two=$(best_time '["integration_time_s"]' "$bin" --threads 2)
    python3 - "$n" "$sim" "$one" "$two" <<'PY'
import sys
n, sim, one, two = int(sys.argv[1]), *map(float, sys.argv[2:])
steps = 2000
print("%-8d %8d %12.0f %12.0f %12.0f %8.2f %8.2f" % (n, 3 * n, steps / sim, steps / one,
      steps / two, one / two, sim / two))
PY
}

events() {
    local args=("$ROOT/examples/heat_exchanger_relay.mo" -p N=1000 --method implicit-euler
        --step 0.01 --stop 2)
    local sim
    sim=$(best_time '["stats"]["integration_time_s"]' "$MOCCA" simulate "${args[@]}")
    printf '%-10s %12.4f\n' simulate "$sim"
    for mode in locate step; do
        local bin
        bin=$(emitted_binary "relay_$mode" "${args[@]}" --events "$mode")
        for _ in $(seq "$RUNS"); do "$bin" --format json; echo; done | python3 -c '
import json, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
r = min(runs, key=lambda r: r["integration_time_s"])
print("%-10s %12.4f %10d %10d %12.1f %12.1f %8.2f %12.1f %8.2f %8d" % (sys.argv[1],
      r["integration_time_s"], r["steps"], r["state_events"], 1e6 * r["median_step_s"],
      1e6 * r["largest_step_s"], r["largest_step_s"] / r["median_step_s"],
      1e6 * r["p999_step_s"], r["p999_step_s"] / r["median_step_s"], r["largest_step_index"]))' "$mode"
    done
}

clocked() {
    local args=("$ROOT/benches/clocked_controller.mo" --method implicit-euler --step 0.001
        --stop 100)
    local sim bin
    sim=$(best_time '["stats"]["integration_time_s"]' "$MOCCA" simulate "${args[@]}")
    printf '%-10s %12.4f %10.0f\n' simulate "$sim" "$(echo "100 / $sim" | bc)"
    bin=$(emitted_binary clocked_step "${args[@]}" --events step)
    for _ in $(seq "$RUNS"); do "$bin" --format json; echo; done | python3 -c '
import json, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
r = min(runs, key=lambda r: r["integration_time_s"])
print("%-10s %12.4f %10.0f %10d %10d %12.1f %12.1f %8.2f %12.1f %8.2f %8d" % ("emitted",
      r["integration_time_s"], 100 / r["integration_time_s"], r["steps"], r["time_events"],
      1e6 * r["median_step_s"], 1e6 * r["largest_step_s"],
      r["largest_step_s"] / r["median_step_s"], 1e6 * r["p999_step_s"],
      r["p999_step_s"] / r["median_step_s"], r["largest_step_index"]))'
}

# An MSL example with events, implicit Euler at its output interval, to its stop time: the
# integration time of `simulate` and of the emitted binary (`--events locate`), best of RUNS.
msl_events() {
    local model=$1
    local args=(--lib "$ROOT/../shared/msl" --model "$model" --method implicit-euler)
    local sim emitted bin
    sim=$(best_time '["stats"]["integration_time_s"]' "$MOCCA" simulate "${args[@]}")
    bin=$(emitted_binary "msl_${model##*.}" "${args[@]}")
    emitted=$(best_time '["integration_time_s"]' "$bin")
    "$bin" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
sim, emitted = float(sys.argv[2]), float(sys.argv[3])
print("%-28s %10.5f %10.5f %8d %8d %8.2f" % (sys.argv[1], sim, emitted, r["steps"],
      r["state_events"] + r["time_events"], sim / emitted))' "${model##*.}" "$sim" "$emitted"
}

functions() {
    local method=$1
    local file=$ROOT/benches/cube_roots.mo
    local args=(--method "$method" --step 0.01 --stop 20)
    local kept inlined bin emitted
    kept=$(best_time '["stats"]["integration_time_s"]' \
        "$MOCCA" simulate "$file" --model CubeRootBench.CubeRoots "${args[@]}")
    inlined=$(best_time '["stats"]["integration_time_s"]' \
        "$MOCCA" simulate "$file" --model CubeRootBench.CubeRootsUnrolled "${args[@]}")
    bin=$(emitted_binary "cube_roots_$method" "$file" --model CubeRootBench.CubeRoots "${args[@]}")
    emitted=$(best_time '["integration_time_s"]' "$bin")
    python3 - "$method" "$kept" "$inlined" "$emitted" <<'PY'
import sys
method, kept, inlined, emitted = sys.argv[1], *map(float, sys.argv[2:])
print("%-16s %12.3f %12.3f %12.3f %10.2f %10.2f" % (method, kept, inlined, emitted,
      kept / inlined, kept / emitted))
PY
}

build() {
    local n=$1
    local model=$OUT/rc_chain_$n.mo dir=$OUT/rc_chain_$n
    python3 "$ROOT/benches/rc_chain.py" "$n" >"$model"
    local start end
    start=$(date +%s.%N)
    "$MOCCA" emit "$model" --method implicit-euler --out "$dir" --force >/dev/null
    end=$(date +%s.%N)
    rm -rf "$OUT/target_$n"
    (cd "$dir" && CARGO_TARGET_DIR=$OUT/target_$n /usr/bin/time -f '%e %M' \
        cargo build --release --offline -q) 2>"$OUT/time_$n.txt"
    read -r seconds kb <"$(tail -1 "$OUT/time_$n.txt" >"$OUT/last_$n.txt"; echo "$OUT/last_$n.txt")"
    printf '%-10s %10.2f %10.1f %10.0f %10d\n' "$((9 * n + 6))" "$(echo "$end - $start" | bc)" \
        "$seconds" "$((kb / 1024))" "$(wc -l <"$dir/src/model.rs")"
}

case $what in
speed)
    printf '%-26s %-34s %12s %12s %8s %8s %6s\n' model method "sim steps/s" "emit steps/s" \
        "sim RTF" "emit RTF" ratio
    for example in heat_exchanger heat_exchanger_nonlinear; do
        speed "$example" implicit-euler
        speed "$example" mixed-euler --partition auto
    done
    ;;
threads)
    SIZES=("$@")
    [ ${#SIZES[@]} -eq 0 ] && SIZES=(1000 1400 2000)
    printf '%-8s %8s %12s %12s %12s %8s %8s\n' N states "sim steps/s" "1 thread" "2 threads" \
        "2 vs 1" "2 vs sim"
    for n in "${SIZES[@]}"; do threads "$n"; done
    ;;
build)
    SIZES=("$@")
    [ ${#SIZES[@]} -eq 0 ] && SIZES=(111 1111 11111)
    printf '%-10s %10s %10s %10s %10s\n' equations "emit s" "build s" "build MiB" "model.rs lines"
    for n in "${SIZES[@]}"; do build "$n"; done
    ;;
events)
    printf '%-10s %12s %10s %10s %12s %12s %8s %12s %8s %8s\n' run "integration s" steps events \
        "median µs" "largest µs" ratio "p99.9 µs" ratio "largest#"
    events
    ;;
msl-events)
    printf '%-28s %10s %10s %8s %8s %8s\n' example "sim s" "emitted s" steps events ratio
    for model in Modelica.Mechanics.Rotational.Examples.CoupledClutches \
        Modelica.Electrical.PowerConverters.Examples.ACDC.RectifierBridge2mPulse.ThyristorBridge2mPulse_RL \
        Modelica.Electrical.Analog.Examples.CauerLowPassSC; do
        msl_events "$model"
    done
    ;;
clocked)
    printf '%-10s %12s %10s %10s %10s %12s %12s %8s %12s %8s %8s\n' run "integration s" \
        "real time×" steps ticks "median µs" "largest µs" ratio "p99.9 µs" ratio "largest#"
    clocked
    ;;
functions)
    printf '%-16s %12s %12s %12s %10s %10s\n' method "kept sim s" "inlined s" "emitted s" \
        "kept/inl" "sim/emit"
    for method in implicit-euler heun; do functions "$method"; done
    ;;
*)
    echo "usage: benches/emit.sh speed | threads [cells...] | build [stages...] | events | msl-events | clocked | functions" >&2
    exit 2
    ;;
esac
