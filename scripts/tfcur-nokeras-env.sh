#!/usr/bin/env bash
# Create .venv-tfcur-nokeras: current TensorFlow CPU alone, what `pip install tensorflow-cpu`
# gives a user (Keras 3, no tf-keras), for the tf2 tests of that case.
#
# Idempotent like scripts/tfcur-env.sh: when the environment exists and its marker matches,
# it only prints the ready line. Cost when built: one tensorflow-cpu install, about 40-60 s
# and 1.3 GB (the wheel comes from pip's cache when .venv-tfcur was built first).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-tfcur-nokeras
REQUIREMENTS="tensorflow-cpu"
MARKER="$VENV/.est2tpu-tfcur-nokeras"

if [ -x "$VENV/bin/python" ] && [ -f "$MARKER" ] && [ "$(head -n1 "$MARKER")" = "$REQUIREMENTS" ]; then
  echo "tfcur-nokeras-env: $VENV ready ($(tail -n1 "$MARKER"))"
  exit 0
fi

PYTHONCUR=${PYTHONCUR:-}
if [ -z "$PYTHONCUR" ]; then
  for candidate in python3.12 python3.11; do
    if "$candidate" -c 'import sys' >/dev/null 2>&1; then
      PYTHONCUR=$candidate
      break
    fi
  done
fi
if [ -z "$PYTHONCUR" ]; then
  echo "tfcur-nokeras-env: neither python3.12 nor python3.11 runs here (set PYTHONCUR)" >&2
  exit 1
fi

build() {
  [ -x "$VENV/bin/python" ] || "$PYTHONCUR" -m venv "$VENV" || return 1
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check tensorflow-cpu || return 1
  TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c \
    "import importlib.util as u, tensorflow as tf; assert u.find_spec('tf_keras') is None; \
assert tf.keras.__version__.startswith('3.')" || return 1
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! build >"$log" 2>&1; then
  cat "$log" >&2
  echo "tfcur-nokeras-env: building $VENV failed" >&2
  exit 1
fi
version=$("$VENV/bin/python" -c "import importlib.metadata as m; \
print('tensorflow-cpu', m.version('tensorflow-cpu') + ',', 'keras', m.version('keras'))")
printf '%s\n%s\n' "$REQUIREMENTS" "$version" >"$MARKER"
echo "tfcur-nokeras-env: $VENV ready ($version)"
