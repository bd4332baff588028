#!/usr/bin/env bash
# suggest-weak on generated RC chains (benches/rc_chain.py: N stages, N states, 3N + 3
# connects, each tried in both orientations) at step 0.1, through the binary:
#
#   cargo build --release && benches/suggest_weak.sh 20 40 80
#
# Prints per size the candidates, those ranked (the others are listed with why not) and the
# whole command's wall time and peak memory.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCCA=${MOCCA:-$ROOT/target/release/mocca}
WORK=$(mktemp -d)
[ -x "$MOCCA" ] || { echo "no $MOCCA: cargo build --release first" >&2; exit 2; }

for n in "${@:-20 40 80}"; do
    python3 "$ROOT/benches/rc_chain.py" "$n" > "$WORK/rc$n.mo"
    /usr/bin/time -f "%e %M" -o "$WORK/time" "$MOCCA" suggest-weak "$WORK/rc$n.mo" --step 0.1 \
        --format json > "$WORK/out.json"
    read -r wall kb < "$WORK/time"
    python3 - "$WORK/out.json" "$n" "$wall" "$kb" <<'PY'
import json, sys
report, n, wall, kb = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], int(sys.argv[4])
c = report["candidates"]
ranked = sum(1 for x in c if "rejected" not in x)
print(f"N = {n}: {len(c)} candidates, {ranked} ranked, {wall} s, {kb // 1024} MB")
PY
done
