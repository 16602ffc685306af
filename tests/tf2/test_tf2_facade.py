"""The tf2 facade (`est2tpu.runtime.tf2`) on current TensorFlow, and the tables the tf2 rules
map through, checked against TensorFlow 2.15 (old symbols) and the facade (new ones)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import est2tpu.runtime.tf2 as facade
from est2tpu.rules._tf2 import MAPPINGS
from est2tpu.rules.tf2001_estimator_facade import FACADE_NAMES

REPO_ROOT = Path(__file__).resolve().parents[2]


def _resolve(root: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def test_importing_the_facade_imports_no_heavy_module() -> None:
    spy = textwrap.dedent(
        """
        import json, sys
        attempted = set()

        class Spy:
            def find_spec(self, name, path=None, target=None):
                attempted.add(name.split(".")[0])
                return None

        sys.meta_path.insert(0, Spy())
        import est2tpu.runtime.tf2
        print(json.dumps(sorted(attempted)))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", spy],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    attempted = set(json.loads(proc.stdout))
    assert not attempted & {"tensorflow", "tf_keras", "keras", "libcst", "typer", "rich"}


@pytest.mark.parametrize("mapping", MAPPINGS, ids=[m.old for m in MAPPINGS])
def test_every_tf2002_target_exists_in_the_facade(mapping: Any) -> None:
    assert callable(_resolve(facade, mapping.new)) or mapping.new.startswith(
        ("GraphKeys.", "losses.Reduction")
    )


@pytest.mark.parametrize("new", sorted(set(FACADE_NAMES.values())))
def test_every_tf2001_target_exists_in_the_facade(new: str) -> None:
    assert _resolve(facade, new) is not None


# Run under TensorFlow 2.15: every old symbol exists there, and every facade function accepts
# every parameter its TF1 original has (so calls keep working unchanged).
_SYMBOLS_PROBE = textwrap.dedent(
    """
    import inspect, json, sys
    import tensorflow as tf
    import est2tpu.runtime.tf2 as facade

    # DATA: the rules' tables, passed in (this interpreter has TensorFlow, not libcst).
    def resolve(root, dotted):
        for part in dotted.split("."):
            root = getattr(root, part)
        return root

    problems = []
    for old_name, new_name in DATA["mappings"]:
        try:
            old = resolve(tf.compat.v1, old_name)
        except AttributeError:
            problems.append(f"tf.compat.v1.{old_name} does not exist")
            continue
        new = resolve(facade, new_name)
        if old_name.split(".")[0] in ("layers", "metrics") and inspect.isfunction(old):
            mine = inspect.signature(new).parameters
            for p in inspect.signature(inspect.unwrap(old)).parameters:
                if p not in mine:
                    problems.append(f"{new_name} lacks TF1 parameter {p!r}")
    for old in DATA["facade_names"]:
        if old.startswith("contrib."):
            continue  # TF 1.x only: checked against TensorFlow 1.15's source
        # `estimator.inputs.*` exists only in the v1 API (tf.compat.v1.estimator.inputs).
        for root in (tf, tf.compat.v1):
            try:
                resolve(root, old)
                break
            except AttributeError:
                pass
        else:
            problems.append(f"tf.{old} does not exist")
    print(json.dumps({"version": tf.__version__, "problems": problems}))
    """
)


@pytest.mark.tf
def test_mapped_symbols_exist_in_tf215_with_their_parameters(harness: ModuleType) -> None:
    data = {"mappings": [[m.old, m.new] for m in MAPPINGS], "facade_names": list(FACADE_NAMES)}
    report = harness.run_tf_json(
        f"DATA = {json.dumps(data)!r}\nimport json\nDATA = json.loads(DATA)\n" + _SYMBOLS_PROBE
    )
    assert report["version"].startswith("2.15")
    assert report["problems"] == []


# One program exercising the facade on current TF; prints a JSON report.
_FACADE_PROBE = textwrap.dedent(
    """
    import glob, json, os, sys
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime.tf2 as est

    tf.keras.utils.set_random_seed(7)
    model_dir = sys.argv[1]
    rng = np.random.RandomState(0)
    X = rng.normal(size=(64, 4)).astype("float32")
    Y = (X[:, 0] > 0).astype("int32")
    W = np.where(np.arange(64) % 3 == 0, 0.0, 1.0 + (np.arange(64) % 2)).astype("float32")
    seen = {}

    def input_fn(params, mode, config):
        seen[mode] = (params["tag"], config.model_dir == model_dir)
        ds = tf.data.Dataset.from_tensor_slices(({"x": X, "w": W}, Y)).batch(16)
        return ds.repeat() if mode == est.ModeKeys.TRAIN else ds

    def model_fn(features, labels, mode, params):
        net = features["x"]
        for units in (8, 8):
            net = est.layers.dense(net, units, activation=tf.nn.relu)
        logits = est.layers.dense(net, 2)
        predicted = tf.argmax(logits, axis=1, output_type=tf.int32)
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(mode, predictions={"class": predicted})
        loss = est.losses.sparse_softmax_cross_entropy(labels, logits, weights=features["w"])
        if mode == est.ModeKeys.EVAL:
            return est.EstimatorSpec(mode, loss=loss, eval_metric_ops={
                "accuracy": est.metrics.accuracy(labels, predicted, weights=features["w"]),
                "per_class": est.metrics.mean_per_class_accuracy(labels, predicted, 2),
                "precision": est.metrics.precision(labels, predicted),
                "recall": est.metrics.recall(labels, predicted),
            })
        optimizer = est.train.AdamOptimizer(params["lr"])
        return est.EstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
            loss, global_step=est.train.get_global_step()))

    estimator = est.Estimator(model_fn, model_dir=model_dir,
                              config=est.RunConfig(tf_random_seed=7, save_summary_steps=5,
                                                   steps_per_execution=4),
                              params={"lr": 0.05, "tag": "p"})
    estimator.train(input_fn, max_steps=6)
    estimator.train(input_fn, max_steps=6)  # already there: nothing to do
    after_max = int(estimator._state.global_step.numpy())
    estimator.train(input_fn, steps=3)
    metrics = estimator.evaluate(input_fn)
    predictions = list(estimator.predict(input_fn))
    state = estimator._state
    dense_names = sorted(layer.name for layer in state.layers.values())
    optimizer = next(iter(state.optimizers.values())).inner
    variables = [v.numpy().tolist() for v in state.trainable_variables()]

    # Numbers the metrics must equal, from the final weights (numpy).
    logits = X
    for i, (k, b) in enumerate(zip(variables[0::2], variables[1::2])):
        logits = logits @ np.array(k) + np.array(b)
        if i < 2:
            logits = np.maximum(logits, 0)
    pred = logits.argmax(1)
    tp = float(((pred == 1) & (Y == 1)).sum()); fp = float(((pred == 1) & (Y == 0)).sum())
    fn = float(((pred == 0) & (Y == 1)).sum())
    expected = {
        "accuracy": float((W * (pred == Y)).sum() / W.sum()),
        "per_class": float(np.mean([(pred[Y == c] == c).mean() for c in (0, 1)])),
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
    }
    # The facade's losses equal TF1's for every reduction.
    R = tf.compat.v1.losses.Reduction
    lab = tf.constant([0, 1, 1, 0]); lg = tf.constant(rng.normal(size=(4, 2)).astype("float32"))
    wt = tf.constant([1.0, 0.0, 2.0, 0.5])
    from est2tpu.runtime.tf2._core import invoke
    loss_gaps = {}
    for red in (R.SUM_BY_NONZERO_WEIGHTS, R.MEAN, R.SUM, R.SUM_OVER_BATCH_SIZE, R.NONE):
        mine, _ = invoke(state, "train", False, lambda: est.losses.sparse_softmax_cross_entropy(
            lab, lg, weights=wt, reduction=red))
        theirs = tf.compat.v1.losses.sparse_softmax_cross_entropy(lab, lg, weights=wt,
                                                                  reduction=red)
        loss_gaps[red] = float(tf.reduce_max(tf.abs(mine - theirs)))
    print(json.dumps({
        "replicas": est.strategy().num_replicas_in_sync,
        "after_max": after_max,
        "metrics": {k: float(v) for k, v in metrics.items()},
        "expected": expected,
        "predictions": len(predictions),
        "dense_names": dense_names,
        "epsilon": optimizer._epsilon,
        "optimizer": type(optimizer).__name__,
        "seen": {k: list(v) for k, v in seen.items()},
        "loss_gaps": loss_gaps,
        "checkpoints": sorted(os.path.basename(p) for p in glob.glob(model_dir + "/ckpt-*.index")),
        "train_events": len(glob.glob(model_dir + "/events.out.tfevents.*")),
        "eval_events": len(glob.glob(model_dir + "/eval/events.out.tfevents.*")),
        "first_kernel": variables[0][0],
    }))
    """
)


def _probe(tfcur: str, harness: ModuleType, tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    report: dict[str, Any] = harness.run_tf_json(
        _FACADE_PROBE, str(tmp / "model"), python=tfcur, env=env, timeout=400
    )
    return report


@pytest.fixture(scope="module")
def probe(tfcur: str, harness: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _probe(tfcur, harness, tmp_path_factory.mktemp("probe1"), {})


@pytest.mark.tf
def test_facade_on_one_device(probe: dict[str, Any]) -> None:
    assert probe["replicas"] == 1
    # max_steps stops at the step; steps adds.
    assert probe["after_max"] == 6
    assert probe["metrics"]["global_step"] == 9
    # Layers are created once per call site (the loop's line twice), named as TF1 names them.
    assert probe["dense_names"] == ["dense", "dense_1", "dense_2"]
    # The TF1 optimizer itself, with TF1's defaults.
    assert probe["optimizer"] == "AdamOptimizer" and probe["epsilon"] == 1e-8
    # Input functions get params, mode and config when they ask for them.
    assert probe["seen"] == {"train": ["p", True], "eval": ["p", True], "infer": ["p", True]}
    assert probe["predictions"] == 64
    for name, want in probe["expected"].items():
        assert probe["metrics"][name] == pytest.approx(want, abs=1e-6), name
    assert all(gap < 1e-6 for gap in probe["loss_gaps"].values()), probe["loss_gaps"]
    assert probe["checkpoints"] == ["ckpt-6.index", "ckpt-9.index"]
    assert probe["train_events"] >= 1 and probe["eval_events"] >= 1


@pytest.mark.tf
def test_weighted_loss_is_scaled_to_the_global_batch(
    probe: dict[str, Any], tfcur: str, harness: ModuleType, tmp_path: Path
) -> None:
    """4 replicas, per-example weights with zeros: the same weights as one device."""
    four = _probe(tfcur, harness, tmp_path, {"EST2TPU_CPU_REPLICAS": "4"})
    assert four["replicas"] == 4
    assert four["first_kernel"] == pytest.approx(probe["first_kernel"], abs=1e-5)
    assert four["metrics"] == pytest.approx(probe["metrics"], abs=1e-5)


# Resume: the same batch every step, so a restart of the input changes nothing.
_RESUME_PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime.tf2 as est

    tf.keras.utils.set_random_seed(3)
    X = np.random.RandomState(1).normal(size=(16, 4)).astype("float32")
    Y = (X.sum(1) > 0).astype("int32")

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": X}, Y)).repeat()

    def model_fn(features, labels, mode):
        net = est.layers.batch_normalization(
            est.layers.dense(features["x"], 8), training=mode == est.ModeKeys.TRAIN)
        logits = est.layers.dense(tf.nn.relu(net), 2)
        loss = est.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = est.train.AdamOptimizer(0.01)
        update_ops = est.get_collection(est.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            train_op = optimizer.minimize(loss, global_step=est.train.get_global_step())
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = est.Estimator(model_fn, model_dir=sys.argv[1],
                              config=est.RunConfig(tf_random_seed=3))
    estimator.train(input_fn, steps=int(sys.argv[2]))
    state = estimator._state
    print(json.dumps({
        "step": int(state.global_step.numpy()),
        "weights": [v.numpy().ravel().tolist() for layer in state.layers.values()
                    for v in layer.weights],
    }))
    """
)


@pytest.mark.tf
def test_resume_in_a_new_process_matches_one_run(
    tfcur: str, harness: ModuleType, tmp_path: Path
) -> None:
    """100 steps, then 100 more in a new process == 200 steps in one process (all weights,
    batch-norm moving averages and Adam's state restored from the object checkpoint)."""

    def run(model_dir: Path, steps: int) -> dict[str, Any]:
        proc = subprocess.run(
            [tfcur, "-c", _RESUME_PROBE, str(model_dir), str(steps)],
            cwd=REPO_ROOT,
            env=harness.tf_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return report

    one = run(tmp_path / "one", 200)
    run(tmp_path / "two", 100)
    resumed = run(tmp_path / "two", 100)
    assert one["step"] == resumed["step"] == 200
    for got, want in zip(resumed["weights"], one["weights"]):
        assert got == pytest.approx(want, abs=1e-6)


# The traced train loop over 4 replicas, an infinite input: what runs every step.
_STEP_PROBE = textwrap.dedent(
    """
    import collections, json, sys
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime.tf2 as est

    X = np.random.RandomState(1).normal(size=(64, 4)).astype("float32")
    Y = (X.sum(1) > 0).astype("int32")

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(16)

    def model_fn(features, labels, mode):
        logits = est.layers.dense(est.layers.dense(features["x"], 8, activation=tf.nn.relu), 2)
        loss = est.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = est.train.AdamOptimizer(0.01).minimize(
            loss, global_step=est.train.get_global_step())
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = est.Estimator(model_fn, model_dir=sys.argv[1])
    estimator.train(input_fn, steps=3)
    (train_steps,) = estimator._functions.values()
    (concrete,) = train_steps._list_all_concrete_functions()
    library = concrete.graph.as_graph_def().library.function
    ops = {f.signature.name: collections.Counter(n.op for n in f.node_def) for f in library}
    body = next(c for name, c in ops.items() if name.startswith("while_body"))
    print(json.dumps({"functions": sorted(ops), "body": body,
                      "replicas": estimator._strategy.num_replicas_in_sync}))
    """
)


@pytest.mark.tf
def test_a_replicated_step_runs_one_all_reduce(
    tfcur: str, harness: ModuleType, tmp_path: Path
) -> None:
    """The gradients and the loss denominators go in one packed all-reduce (one
    collective per replica per step, no barrier between the forward and backward pass), the
    loss is averaged once per execution, and an infinite input needs no end test per step."""
    report = harness.run_tf_json(
        _STEP_PROBE,
        str(tmp_path / "model"),
        python=tfcur,
        env={"EST2TPU_CPU_REPLICAS": "4"},
        timeout=400,
    )
    assert report["replicas"] == 4
    assert report["body"].get("CollectiveReduceV2") == 4, report["body"]
    assert report["body"].get("IteratorGetNext") == 4
    # the while loop's cond and body, and no conditional's branches around each step
    assert len(report["functions"]) == 2, report["functions"]
