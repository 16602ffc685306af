#!/usr/bin/env bash
# The README demo: migrate the bundled quickstart to TPUEstimator and train the result on CPU.
#
# 1. .venv: est2tpu itself (light: libcst, typer, rich; no TensorFlow).
# 2. .venv-tf215: TensorFlow 2.15 to run the migrated program (scripts/tf215-env.sh).
# 3. Copy examples/quickstart to a temporary directory, show the diff, migrate in place.
# 4. Train the migrated copy for a few steps; on a machine without a TPU the
#    generated code runs TPUEstimator with use_tpu=False.
# Extra arguments go to the training program (default: --steps 50).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/est2tpu ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
fi
bash scripts/tf215-env.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/est2tpu-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R examples/quickstart "$work/quickstart"
rm -rf "$work/quickstart/__pycache__"

echo "== est2tpu migrate --diff (nothing is written) =="
# --diff may exit 1 to say "would change"; that is the expected answer here.
.venv/bin/est2tpu migrate --diff "$work/quickstart" || [ $? -eq 1 ]

echo "== est2tpu migrate =="
.venv/bin/est2tpu migrate "$work/quickstart"

echo "== train the migrated quickstart with TensorFlow 2.15 on CPU =="
if [ $# -eq 0 ]; then
  set -- --steps 50
fi
(
  cd "$work/quickstart"
  PYTHONPATH="$ROOT" TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES="" \
    "$ROOT/.venv-tf215/bin/python" train.py --model_dir "$work/model" "$@" 2> "$work/train.log" \
    || { tail -n 40 "$work/train.log" >&2; exit 1; }
)
