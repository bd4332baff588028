#!/usr/bin/env bash
# Events: the whole `simulate` command on examples/pulse_rc.mo (an RC load switched by a
# 10 kHz pulse, 10⁴ time events per simulated second), with BDF and with trapezoidal at a
# fixed step, through the binary:
#
#   cargo build --release && benches/events.sh          # stop time 1 s
#   STOP=10 RUNS=3 benches/events.sh                     # another stop time, runs
#
# Prints, per method, the events, steps and the best of RUNS wall times of the whole command
# (parse, compile, initialise, integrate; no trajectory recorded).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
MODEL=$ROOT/examples/pulse_rc.mo
STOP=${STOP:-1}
RUNS=${RUNS:-5}
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }

for method in "bdf --tol 1e-6" "trapezoidal --step 1e-5"; do
    best=
    for _ in $(seq "$RUNS"); do
        start=$(date +%s.%N)
        # shellcheck disable=SC2086
        json=$("$MOCCA" simulate "$MODEL" --stop "$STOP" --method $method --format json)
        end=$(date +%s.%N)
        wall=$(echo "$end - $start" | bc -l)
        if [ -z "$best" ] || [ "$(echo "$wall < $best" | bc -l)" = 1 ]; then best=$wall; fi
    done
    echo "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
e, s = d["events"], d["stats"]
print("%-24s %6d time events %8d steps  best whole command %.3f s" % (
    sys.argv[1], e["time_events"] + e["state_events"], s["steps"], float(sys.argv[2])))' "$method" "$best"
done
