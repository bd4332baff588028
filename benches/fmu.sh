#!/usr/bin/env bash
# FMI: the heat exchanger's co-simulation FMU (N = 1000, 3000 states, implicit Euler at
# 0.01) run by FMPy, against the emitted binary's own integration:
#
#   cargo build --release && pip install fmpy && benches/fmu.sh      # stop time 10 s
#   STOP=100 benches/fmu.sh
#
# Prints the binary's integration time, the time FMPy spends in fmi2DoStep (its low-level
# API, one DoStep per step), and FMPy's whole simulate_fmu (extracting, reading the model
# description, instantiating, initialising, stepping, reading two outputs per step).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
STOP=${STOP:-10}
WORK=${WORK:-$(mktemp -d)}
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }
export CARGO_TARGET_DIR=$WORK/target

"$MOCCA" emit "$ROOT/examples/heat_exchanger.mo" -p N=1000 --method implicit-euler \
    --step 0.01 --stop "$STOP" --out "$WORK/crate" --force --fmu "$WORK/hx.fmu" >/dev/null
(cd "$WORK/crate" && cargo build --release --offline --quiet)
binary=$(grep -A2 '\[\[bin\]\]' "$WORK/crate/Cargo.toml" | grep name | cut -d'"' -f2)
"$CARGO_TARGET_DIR/release/$binary" --format json |
    python3 -c 'import json, sys; print("binary integration  %.3f s" % json.load(sys.stdin)["integration_time_s"])'
python3 - "$WORK/hx.fmu" "$STOP" <<'PY'
import sys, time
from fmpy import simulate_fmu, read_model_description, extract
from fmpy.fmi2 import FMU2Slave
fmu, stop = sys.argv[1], float(sys.argv[2])
md = read_model_description(fmu)
slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName='bench')
slave.instantiate(); slave.setupExperiment(startTime=0.0)
slave.enterInitializationMode(); slave.exitInitializationMode()
steps = round(stop / 0.01)
start = time.perf_counter()
for k in range(steps):
    slave.doStep(k * 0.01, 0.01)
print("FMPy in fmi2DoStep  %.3f s" % (time.perf_counter() - start))
slave.terminate(); slave.freeInstance()
start = time.perf_counter()
simulate_fmu(fmu, stop_time=stop, step_size=0.01, output_interval=0.01, output=['T_a[1000]', 'T_b[1]'])
print("FMPy simulate_fmu   %.3f s" % (time.perf_counter() - start))
PY
