#!/usr/bin/env bash
# Set up from nothing, lint, and run every test (`make test`, and what .ci/run runs).
#
# - .venv: the tool, its test dependencies and the pinned linters (no TensorFlow).
# - .venv-tf215: TensorFlow 2.15 for the tests that train migrated code, built by
#   scripts/tf215-env.sh; when it exists those tests are required, not skipped.
# - .venv-tfcur: current TensorFlow (+ tf-keras) for the tf2 target's tests, built by
#   scripts/tfcur-env.sh.
# - .venv-tfcur-nokeras: current TensorFlow alone (what `pip install tensorflow-cpu` gives),
#   built by scripts/tfcur-env.sh --no-keras (one more TensorFlow install: 1-3.5 min, 1.3 GB).
# Extra arguments go to pytest. Without any, this is the full run: ruff and mypy (while the
# TensorFlow environments build), then the whole suite in two worker processes (pytest-xdist; EST2TPU_TEST_WORKERS=0 runs it in
# this one). With arguments only pytest runs, as asked, unless EST2TPU_LINT=1 (`make check`).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
for venv in .venv .venv-tf215 .venv-tfcur .venv-tfcur-nokeras; do
  [ -x "$venv/bin/python" ] || missing="$missing $venv"
done
if [ -n "$missing" ]; then
  echo "test.sh: building$missing first (each TensorFlow environment: about 1.3-1.6 GB and"
  echo "test.sh: 1-4 minutes depending on the network; .venv: about 190 MB, about a minute)"
fi

# The TensorFlow environments build side by side (downloads and installs that share nothing;
# the no-Keras one after .venv-tfcur, whose tensorflow-cpu wheel pip's cache then holds),
# while .venv is built and ruff and mypy run here: all of it comes before the first test.
builders=""
if [ -f scripts/tf215-env.sh ]; then
  bash scripts/tf215-env.sh &
  builders="$builders $!"
fi
if [ -f scripts/tfcur-env.sh ]; then
  { bash scripts/tfcur-env.sh && bash scripts/tfcur-env.sh --no-keras; } &
  builders="$builders $!"
fi
PYTHON=${PYTHON:-python3}
failed=0
# Reinstall only when the project metadata changed since the last install.
stamp=.venv/.est2tpu-installed
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "test.sh: installing est2tpu with its test and lint dependencies into .venv"
  if { [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv; } &&
    .venv/bin/python -m pip install -q -e '.[test,dev]'; then
    touch "$stamp"
  else
    failed=1 # no .venv: wait for the builders, then fail
  fi
fi
if [ "$failed" -eq 0 ] && { [ "$#" -eq 0 ] || [ "${EST2TPU_LINT:-0}" = 1 ]; }; then
  echo "test.sh: ruff and mypy"
  .venv/bin/ruff check . && .venv/bin/mypy || failed=1
fi
built=0
for pid in $builders; do
  wait "$pid" || built=1
done
if [ "$built" -ne 0 ] || [ "$failed" -ne 0 ]; then
  exit 1
fi
if [ -x .venv-tfcur/bin/python ]; then
  export EST2TPU_TFCUR_PYTHON="$PWD/.venv-tfcur/bin/python"
fi
if [ -x .venv-tfcur-nokeras/bin/python ]; then
  export EST2TPU_TFCUR_NOKERAS_PYTHON="$PWD/.venv-tfcur-nokeras/bin/python"
fi
if [ -x .venv-tf215/bin/python ]; then
  export EST2TPU_TF215_PYTHON="$PWD/.venv-tf215/bin/python"
  export EST2TPU_REQUIRE_TF=1
fi

if [ "$#" -eq 0 ]; then
  set -- -n "${EST2TPU_TEST_WORKERS:-2}" --dist loadgroup --durations=25
fi

rc=0
.venv/bin/python -m pytest "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: no tests ran; that is a failure" >&2
  exit 1
fi
exit "$rc"
