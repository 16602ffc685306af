"""A big parsed tree is frozen for the cyclic collector while a run uses it
(`cstutil.gc_paused`), and given back when the run is done: garbage cycles frozen with it
are freed by the next full collection, through the API and through the engine alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# A module long enough to be frozen (`engine.FROZEN_LINES`), with an Estimator to migrate.
BIG = (
    "import tensorflow as tf\n\n\n"
    "def model_fn(features, labels, mode, params):\n"
    "    loss = tf.reduce_mean(features['x'])\n"
    "    train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss)\n"
    "    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)\n\n\n"
    "def main():\n"
    "    est = tf.estimator.Estimator(model_fn)\n"
    + "".join(f"    print(tf.add({i}, 1))\n" for i in range(2100))
)

CHECK = textwrap.dedent(
    """
    import gc, sys, weakref
    from pathlib import Path

    class Cycle:
        pass

    def garbage():
        # a cycle of garbage, pending for the collector when the big tree is frozen
        a, b = Cycle(), Cycle()
        a.other, b.other = b, a
        return weakref.ref(a)

    frozen = []
    gc.freeze = (lambda freeze: lambda: (frozen.append(True), freeze()))(gc.freeze)
    gc.collect()
    gc.disable()  # the cycle stays pending, whatever the thresholds
    ref = garbage()
    gc.enable()
    if sys.argv[1] == "api":
        from est2tpu import api
        results = list(api.migrate_paths([Path(sys.argv[2])], jobs=1))
        changed = [r.status.value for r in results]
    else:
        from est2tpu import engine
        from est2tpu.index import ProjectIndex
        from est2tpu.ftypes import Target
        text = Path(sys.argv[2]).read_text()
        engine.migrate_module(
            text, path=sys.argv[2], index=ProjectIndex(), target=Target.TPU_ESTIMATOR,
            rules=engine.select_rules(Target.TPU_ESTIMATOR),
        )
        changed = []
    gc.collect()
    print(bool(frozen), gc.get_freeze_count(), ref() is None, changed)
    """
)


def run(how: str, path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHECK, how, str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_run_gives_back_what_it_froze(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(BIG)
    assert run("api", tmp_path / "big.py") == "True 0 True ['changed']"


def test_the_engine_gives_back_the_tree_it_parsed(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(BIG)
    assert run("engine", tmp_path / "big.py") == "True 0 True []"
