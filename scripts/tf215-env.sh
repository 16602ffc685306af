#!/usr/bin/env bash
# Create .venv-tf215 (Python 3.11, TensorFlow 2.15 CPU + Estimator) for the tests that train.
#
# Idempotent: when the environment exists and its marker matches the pinned
# requirements, it only prints the ready line.  TensorFlow 2.15 is the last line
# with tf.estimator and needs Python <= 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-tf215
# pandas: for pandas_input_fn (its shim is tested against the original).
REQUIREMENTS="tensorflow-cpu==2.15.1 tensorflow-estimator==2.15.0 pandas==2.2.3"
MARKER="$VENV/.est2tpu-tf215"
PYTHON311=${PYTHON311:-python3.11}

if [ -x "$VENV/bin/python" ] && [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$REQUIREMENTS" ]; then
  echo "tf215-env: $VENV ready ($REQUIREMENTS)"
  exit 0
fi

# pyenv installs shims for versions that are not selected: check that it runs.
if ! "$PYTHON311" -c 'import sys' >/dev/null 2>&1; then
  echo "tf215-env: $PYTHON311 not found; TensorFlow 2.15 needs Python 3.11 (set PYTHON311)" >&2
  exit 1
fi

echo "tf215-env: building $VENV with $PYTHON311: $REQUIREMENTS"
echo "tf215-env: about 1.3 GB, 1-4 minutes depending on the network; pip's output is shown only on failure"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! {
  [ -x "$VENV/bin/python" ] || "$PYTHON311" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  # shellcheck disable=SC2086  # the pins are separate words on purpose
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check $REQUIREMENTS
  TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c \
    "import tensorflow as tf; assert tf.__version__ == '2.15.1'; tf.estimator.Estimator"
} >"$log" 2>&1; then
  cat "$log" >&2
  echo "tf215-env: building $VENV failed" >&2
  exit 1
fi
echo "$REQUIREMENTS" >"$MARKER"
echo "tf215-env: $VENV ready ($REQUIREMENTS)"
