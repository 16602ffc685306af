#!/usr/bin/env bash
# `make demo`: migrate the bundled quickstart (examples/quickstart) to TPUEstimator, keep the
# migrated copy in build/demo/quickstart, and prove it with `est2tpu verify`: the original and
# the migrated program train on CPU under the same seeds and their numbers are compared.
#
# 1. .venv: est2tpu itself (libcst, typer, rich; no TensorFlow).
# 2. The migration: `migrate --diff`, then `migrate` of a copy. It needs no TensorFlow and is
#    shown even when the next steps cannot run.
# 3. TensorFlow 2.15 with the Estimator, which needs Python 3.11 (scripts/tf215-env.sh builds
#    .venv-tf215). EST2TPU_TF215_PYTHON names an interpreter that already has it; PYTHON311
#    names the Python 3.11 to build it with. Without either, the demo ends after step 2 and
#    says how to get Python 3.11.
# 4. `est2tpu verify`: original vs migrated, on CPU (TPUEstimator with use_tpu=False).
# 5. `est2tpu verify --tpu`: the migrated copy on TPUEstimator's own TPU path, on CPU.
# Arguments go to the training program (default: --steps 50).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=build/demo

PYTHON=${PYTHON:-python3}
PYTHON311=${PYTHON311:-python3.11}
TF_PYTHON=${EST2TPU_TF215_PYTHON:-}

say() { printf '\n== %s ==\n' "$*"; }

# Python 3.11 first: it decides how far the demo goes, and finding it missing must not wait
# for anything to be installed.
if [ -n "$TF_PYTHON" ]; then
  tf_note="TensorFlow 2.15 from $TF_PYTHON (EST2TPU_TF215_PYTHON)"
elif [ -x .venv-tf215/bin/python ] || "$PYTHON311" -c 'import sys' >/dev/null 2>&1; then
  tf_note="TensorFlow 2.15 in .venv-tf215"
else
  tf_note=""
fi

echo "est2tpu demo: migrate examples/quickstart to TPUEstimator and compare it with the original."
if [ -z "$tf_note" ]; then
  echo "Python 3.11 not found ($PYTHON311): TensorFlow 2.15, the last release with tf.estimator,"
  echo "needs it. The demo shows the migration, which needs no TensorFlow, and stops before training."
else
  echo "Training and comparing use $tf_note."
fi

if [ ! -x .venv/bin/est2tpu ]; then
  say "1. installing est2tpu into .venv (libcst, typer, rich: about 60 MB, under a minute, once)"
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
else
  say "1. est2tpu is installed in .venv"
fi

say "2. the migration: est2tpu migrate --diff (nothing is written), then est2tpu migrate"
rm -rf "$OUT/quickstart"
mkdir -p "$OUT"
cp -R examples/quickstart "$OUT/quickstart"
rm -rf "$OUT/quickstart/__pycache__"
(
  # Relative paths, so that the diff reads a/quickstart/train.py, as it would in a project.
  cd "$OUT"
  # --diff exits 1 when files would change: the expected answer here.
  "$ROOT/.venv/bin/est2tpu" migrate --diff --quiet quickstart || [ $? -eq 1 ]
  "$ROOT/.venv/bin/est2tpu" migrate quickstart
)
echo "The migrated copy is $OUT/quickstart/train.py (the original: examples/quickstart/train.py);"
echo "it is replaced at each run of the demo."

if [ -z "$tf_note" ]; then
  say "stopped before training: Python 3.11 not found"
  echo "Install Python 3.11 (pyenv install 3.11, or your system's python3.11 package), then run"
  echo "make demo again; PYTHON311=/path/to/python3.11 names one that is not on PATH."
  exit 0
fi

if [ -z "$TF_PYTHON" ]; then
  say "3. TensorFlow 2.15 in .venv-tf215 (scripts/tf215-env.sh: built once, about 1.3 GB, 1-4 minutes)"
  PYTHON311=$PYTHON311 bash scripts/tf215-env.sh
  TF_PYTHON=$ROOT/.venv-tf215/bin/python
else
  say "3. TensorFlow 2.15 from $TF_PYTHON"
fi

if [ $# -eq 0 ]; then
  set -- --steps 50
fi
say "4. est2tpu verify: the original (twice) and the migrated copy train on CPU, then compare"
echo "(three short training runs: about half a minute)"
TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES="" \
  .venv/bin/est2tpu verify --migrated "$OUT/quickstart" examples/quickstart -- \
  "$TF_PYTHON" train.py "$@"

say "5. est2tpu verify --tpu: would the migrated program run on a TPU? (TPUEstimator's TPU path, on CPU)"
echo "(one run that builds the TPU graph for 8 cores and stops: about 20 seconds)"
TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES="" \
  .venv/bin/est2tpu verify --tpu --migrated "$OUT/quickstart" examples/quickstart -- \
  "$TF_PYTHON" train.py "$@"

echo
echo "Open $OUT/quickstart/train.py to read the migrated program. To run it yourself:"
echo "  cd $OUT/quickstart && PYTHONPATH=$ROOT $TF_PYTHON train.py"
echo "(migrated code imports est2tpu.runtime: in your own environment, pip install \"est2tpu[tpu-estimator]\")"
