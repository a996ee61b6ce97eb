# Sourced by the lab's device scripts (lab/decode/paged.sh, lab/hopper/bwd.sh,
# lab/hopper/device.sh): `medians DIR` prints each criterion benchmark's median under DIR
# (a CRITERION_HOME), one "group/row N.NN us" line each.
medians() {
  python3 - "$1" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*/*/new/estimates.json")):
    print(f"{f.parts[-4]}/{f.parts[-3]} {json.loads(f.read_text())['median']['point_estimate'] / 1e3:.2f} us")
PY
}
