#!/usr/bin/env bash
# The GPU check (scripts/device_check.py): on a GPU machine without network whose Python has torch + CUDA,
# transformers, peft, sacrebleu and sentencepiece. Installs only what is missing, from the wheels in .whl/ (made
# beforehand by `make device-wheels`), into /tmp/simpe-site, then runs the check. Usage:
#   scripts/device_check.sh --out OUT [--segments 100]      # on the GPU
#   scripts/device_check.sh --cpu --out OUT                 # the same steps on tiny inputs, on the CPU (make test runs it)
# The Python it runs: $PYTHON when set (only that one); else the project's .venv/bin/python where it exists, then
# python3, the first of them that has torch. When none has torch it says so in one line and exits 2 (no traceback);
# so does a missing package the wheels in .whl/ do not provide.
set -euo pipefail
cd "$(dirname "$0")/.."
has_torch() { "$1" -c "import torch" >/dev/null 2>&1; }
if [ -n "${PYTHON:-}" ]; then
  candidates=("$PYTHON")
else
  candidates=()
  [ -x .venv/bin/python ] && candidates+=(.venv/bin/python)
  candidates+=(python3)
fi
PY=
for candidate in "${candidates[@]}"; do
  if has_torch "$candidate"; then PY=$candidate; break; fi
done
if [ -z "$PY" ]; then
  tried=$(printf '%s, ' "${candidates[@]}")
  echo "device_check: no Python with torch: tried ${tried%, }${PYTHON:+ (PYTHON)}; set PYTHON to one that has torch (the GPU image's python3, or this repository's .venv/bin/python after make venv)" >&2
  exit 2
fi
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
absent=$("$PY" - <<'PYEOF'
import importlib.util
print(" ".join(m for m in ("transformers", "peft", "sacrebleu", "sacremoses", "sentencepiece", "yaml", "numpy")
               if importlib.util.find_spec(m) is None))
PYEOF
)
if [ -n "$absent" ]; then
  echo "device_check: $PY has torch but not: $absent (make device-wheels puts the wheels of what the GPU image lacks in .whl/)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1
exec "$PY" scripts/device_check.py "$@"
