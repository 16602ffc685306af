#!/usr/bin/env bash
# Create the current-TensorFlow environments of the tf2 tests (Python 3.12 or 3.11):
#
#   scripts/tfcur-env.sh              .venv-tfcur: tensorflow-cpu + tf-keras + tensorboard, what
#                                     `est2tpu[tf2]` installs next to TensorFlow
#   scripts/tfcur-env.sh --no-keras   .venv-tfcur-nokeras: tensorflow-cpu alone, what
#                                     `pip install tensorflow-cpu` gives a user (Keras 3)
#
# Idempotent: when the environment exists and its marker matches the requirements, it only
# prints the ready line.  tf-keras is installed with --no-deps: its metadata requires the
# `tensorflow` package, and pip would otherwise pull in the 572 MB GPU build next to
# tensorflow-cpu.  The tf2 runtime shim builds the user's layers with tf-keras (Keras 2),
# whose layers and metrics are the ones tf.compat.v1 was written against.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "")
    NAME=tfcur-env
    VENV=.venv-tfcur
    REQUIREMENTS="tensorflow-cpu tf-keras(--no-deps) tensorboard"
    MARKER="$VENV/.est2tpu-tfcur"
    KERAS_PACKAGE=tf-keras
    ;;
  --no-keras)
    NAME=tfcur-nokeras-env
    VENV=.venv-tfcur-nokeras
    REQUIREMENTS="tensorflow-cpu"
    MARKER="$VENV/.est2tpu-tfcur-nokeras"
    KERAS_PACKAGE=keras
    ;;
  *)
    echo "usage: scripts/tfcur-env.sh [--no-keras]" >&2
    exit 2
    ;;
esac

if [ -x "$VENV/bin/python" ] && [ -f "$MARKER" ] && [ "$(head -n1 "$MARKER")" = "$REQUIREMENTS" ]; then
  echo "$NAME: $VENV ready ($(tail -n1 "$MARKER"))"
  exit 0
fi

PYTHONCUR=${PYTHONCUR:-}
if [ -z "$PYTHONCUR" ]; then
  for candidate in python3.12 python3.11; do
    # pyenv installs shims for versions that are not selected: check that it runs.
    if "$candidate" -c 'import sys' >/dev/null 2>&1; then
      PYTHONCUR=$candidate
      break
    fi
  done
fi
if [ -z "$PYTHONCUR" ]; then
  echo "$NAME: neither python3.12 nor python3.11 runs here (set PYTHONCUR)" >&2
  exit 1
fi

echo "$NAME: building $VENV with $PYTHONCUR: $REQUIREMENTS"
echo "$NAME: about 1.5 GB, 1-4 minutes depending on the network; pip's output is shown only on failure"

build() {
  [ -x "$VENV/bin/python" ] || "$PYTHONCUR" -m venv "$VENV" || return 1
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip || return 1
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check tensorflow-cpu || return 1
  if [ "$KERAS_PACKAGE" = keras ]; then
    TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c \
      "import importlib.util as u, tensorflow as tf; assert u.find_spec('tf_keras') is None; \
assert tf.keras.__version__.startswith('3.')" || return 1
    return 0
  fi
  local tf_version
  tf_version=$("$VENV/bin/python" -c \
    "import importlib.metadata as m; print(m.version('tensorflow-cpu'))") || return 1
  # The same release line as TensorFlow; no deps, or pip adds the GPU `tensorflow` wheel.
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    "tf-keras~=${tf_version%.*}.0" || return 1
  # What `est2tpu[tf2]` installs too: TensorFlow 2.20+ writes summaries through it.
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "tensorboard~=${tf_version%.*}.0" || return 1
  TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c \
    "import tensorflow as tf, tf_keras; assert not hasattr(tf, 'estimator'); tf_keras.layers.Dense" \
    || return 1
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! build >"$log" 2>&1; then
  cat "$log" >&2
  echo "$NAME: building $VENV failed" >&2
  exit 1
fi
version=$("$VENV/bin/python" -c "import importlib.metadata as m; \
print('tensorflow-cpu', m.version('tensorflow-cpu') + ',', '$KERAS_PACKAGE', m.version('$KERAS_PACKAGE'))")
printf '%s\n%s\n' "$REQUIREMENTS" "$version" >"$MARKER"
echo "$NAME: $VENV ready ($version)"
