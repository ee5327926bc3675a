#!/usr/bin/env bash
# The GPU check (scripts/device_check.py): on a GPU machine without network whose python3 has torch + CUDA,
# transformers, peft, sacrebleu and sentencepiece. Installs only what is missing, from the wheels in .whl/ (made
# beforehand by `make device-wheels`), into /tmp/simpe-site, then runs the check. Usage:
#   scripts/device_check.sh --out OUT [--segments 100]      # on the GPU
#   scripts/device_check.sh --cpu --out OUT                 # the same steps on tiny inputs, on the CPU (make test runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  missing=$("$PY" - <<'PYEOF'
import importlib.util
for module, wheel in (("sacremoses", "sacremoses"), ("peft", "peft"), ("sacrebleu", "sacrebleu"), ("yaml", "PyYAML"),
                      ("sentencepiece", "sentencepiece"), ("regex", "regex"), ("joblib", "joblib"), ("click", "click")):
    if importlib.util.find_spec(module) is None:
        print(wheel)
PYEOF
)
  if [ -n "$missing" ]; then
    echo "device_check: installing from .whl/: $missing" >&2
    wheels=()
    for name in $missing; do wheels+=( $(ls .whl/ | grep -i "^${name//-/_}-" | sed 's|^|.whl/|') ); done
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/simpe-site "${wheels[@]}"
    export PYTHONPATH=/tmp/simpe-site${PYTHONPATH:+:$PYTHONPATH}
  fi
fi
export PYTHONUNBUFFERED=1
exec "$PY" scripts/device_check.py "$@"
