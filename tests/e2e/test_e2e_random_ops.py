"""Random ops under the tpu-estimator target: on CPU the migrated program gives every random
op of its training graph the seeds the original's gives it, so it trains bit-identically to
an original that is reproducible itself, and like it otherwise.

``programs/random_ops.py`` trains six shapes (``tf.compat.v1.layers.dropout``;
``tf.random.normal`` and ``tf.nn.dropout`` over an unseeded shuffle; a Keras ``Dropout`` in a
model_fn; ``tf.nn.dropout`` in every mode, so evaluation and predictions are random too;
``DNNClassifier(dropout=...)``; ``model_to_estimator`` of a model with ``GaussianNoise`` and
``Dropout``) and records the seeds of each training graph's random ops.

- Seeded (``RunConfig(tf_random_seed=...)`` and ``tf.keras.utils.set_random_seed``): the
  migration's losses, predictions and seeds equal the original's, and it leaves Python's seed
  generators where the original leaves them.
- Unseeded: TensorFlow's ``get_seed`` gives an op without a seed of its own, in a graph
  without a seed, the seeds (0, 0), and the kernel then draws fresh ones at each run. The
  original differs from itself; the migration gives each op the same (0, 0).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from est2tpu.api import migrate_paths
from est2tpu.ftypes import Status
from est2tpu.textio import encode

pytestmark = pytest.mark.tf

PROGRAM = Path(__file__).with_name("programs") / "random_ops.py"
SHAPES = ["keras_layers", "keras_model", "layers_dropout", "mc_dropout", "nn_ops", "premade"]
# The random ops each shape's training graph runs (the ops whose seeds decide the run).
RANDOM_OPS = {
    "layers_dropout": ["dropout/dropout/random_uniform/RandomUniform", "ShuffleDataset"],
    "nn_ops": [
        "random_normal/RandomStandardNormal",
        "dropout/random_uniform/RandomUniform",
        "ShuffleDataset",
    ],
    "keras_layers": ["dropout/dropout/random_uniform/RandomUniform", "ShuffleDataset"],
    "mc_dropout": ["dropout/random_uniform/RandomUniform", "ShuffleDataset"],
    "premade": [
        "dnn/hiddenlayer_0/kernel/Initializer/random_uniform/RandomUniform",
        "dnn/dropout/dropout/random_uniform/RandomUniform",
        "dnn/logits/kernel/Initializer/random_uniform/RandomUniform",
        "ShuffleDataset",
    ],
    "keras_model": [
        "noise/random_normal/RandomStandardNormal",
        "drop/dropout/random_uniform/RandomUniform",
        "ShuffleDataset",
    ],
}
# An op with an explicit seed: the shuffle of `seeded_input_fn` (seed=11).
EXPLICIT = {("layers_dropout", "ShuffleDataset"), ("keras_layers", "ShuffleDataset")}


def write(text: str, folder: Path, name: str = "random_ops.py") -> Path:
    folder.mkdir(parents=True)
    program = folder / name
    program.write_text(text)
    return program


def migrated_copy(text: str, folder: Path, name: str = "random_ops.py") -> Path:
    """Write ``text`` as ``folder/name``, migrate it (tpu-estimator), return its path."""
    program = write(text, folder, name)
    (result,) = migrate_paths([program])
    assert result.status is Status.CHANGED, result.error
    assert result.findings == []
    assert result.new_text is not None
    program.write_bytes(encode(result.new_text, result.encoding, result.bom))
    return program


def run(harness: ModuleType, python: str, program: Path, work: Path) -> dict[str, Any]:
    report, _ = harness.run_program(python, program, work)
    assert sorted(report) == SHAPES
    return report


def seeds_of(report: dict[str, Any]) -> dict[str, dict[str, tuple[int, int]]]:
    return {
        shape: {name: (seed, seed2) for name, seed, seed2 in result["seeds"]}
        for shape, result in report.items()
    }


def test_random_ops_train_bit_identically_when_the_original_is_seeded(
    harness: ModuleType, tmp_path: Path
) -> None:
    python = harness.tf_python()
    original_text = PROGRAM.read_text()
    assert "\nSEEDED = True\n" in original_text
    migrated = migrated_copy(original_text, tmp_path / "migrated")
    text = migrated.read_text()
    assert text.count("tf.compat.v1.estimator.tpu.TPUEstimator(") == 4
    assert "tpu_runtime.premade.DNNClassifier(" in text
    assert "tpu_runtime.model_to_estimator(" in text
    program = write(original_text, tmp_path / "original")
    original = run(harness, python, program, tmp_path / "original" / "run")
    again = run(harness, python, migrated, tmp_path / "migrated" / "run")
    seeds = seeds_of(original)
    for shape in SHAPES:
        assert sorted(seeds[shape]) == sorted(RANDOM_OPS[shape]), shape
        # Every op runs with fixed seeds: the graph-level seed (11) and an op seed.
        assert all(pair != (0, 0) and pair[0] == 11 for pair in seeds[shape].values()), shape
    assert again == original


def test_random_ops_without_seeds_run_unseeded_in_both(harness: ModuleType, tmp_path: Path) -> None:
    python = harness.tf_python()
    original_text = PROGRAM.read_text().replace("\nSEEDED = True\n", "\nSEEDED = False\n")
    migrated = migrated_copy(original_text, tmp_path / "migrated")
    program = write(original_text, tmp_path / "original")
    first = run(harness, python, program, tmp_path / "original" / "run")
    second = run(harness, python, program, tmp_path / "original" / "run_again")
    again = run(harness, python, migrated, tmp_path / "migrated" / "run")
    seeds = seeds_of(first)
    assert seeds_of(second) == seeds_of(again) == seeds
    for shape in SHAPES:
        assert sorted(seeds[shape]) == sorted(RANDOM_OPS[shape]), shape
        for name, pair in seeds[shape].items():
            if (shape, name) in EXPLICIT:
                # An op seed without a graph seed: TensorFlow's DEFAULT_GRAPH_SEED.
                assert pair == (87654321, 11)
            else:
                assert pair == (0, 0), (shape, name)
        # Drawn afresh at each run: the original differs from itself ...
        assert first[shape]["loss"] != second[shape]["loss"], shape
        assert first[shape]["prediction"] != second[shape]["prediction"], shape
        # ... and the migration trains as it does.
        assert math.isfinite(again[shape]["loss"]), shape


def test_model_to_estimator_run_again_draws_the_originals_python_seeds(
    harness: ModuleType, tmp_path: Path
) -> None:
    """``programs/keras_rerun.py`` runs ``model_to_estimator`` twice over one model_dir.
    TensorFlow's clones the model only when it writes the first checkpoint; the shim clones it
    each time to read the weights' names, and puts back the Python seeds that clone draws. A
    layer built after it gets the original's initial weights in both runs."""
    python = harness.tf_python()
    program = Path(__file__).with_name("programs") / "keras_rerun.py"
    migrated = migrated_copy(program.read_text(), tmp_path / "migrated", program.name)
    assert "tpu_runtime.model_to_estimator(" in migrated.read_text()
    original, _ = harness.run_program(python, program, tmp_path / "original")
    again, _ = harness.run_program(python, migrated, tmp_path / "migrated" / "run")
    # The second run resumed from the first's checkpoint, and its probe layer drew other
    # seeds than the first run's (Keras' generator moved on by the seeds the runs drew).
    assert [run["global_step"] for run in original] == [5, 10]
    assert original[0]["probe"] != original[1]["probe"]
    assert again == original


def test_numpy_input_fn_shuffle_varies_in_the_original_and_the_migration_alike(
    harness: ModuleType, tmp_path: Path
) -> None:
    """``numpy_input_fn(shuffle=True)`` changes its batches from run to run whatever the
    seeds (a random starting row from an OS-seeded ``random``, a queue filled by a thread).
    Off TPU the migration calls TensorFlow's own function: the same queue, with the same
    seeds, and the same variation."""
    python = harness.tf_python()
    program = Path(__file__).with_name("programs") / "numpy_shuffle.py"
    migrated = migrated_copy(program.read_text(), tmp_path / "migrated", program.name)
    assert "tpu_runtime.numpy_input_fn(" in migrated.read_text()
    first, _ = harness.run_program(python, program, tmp_path / "original")
    second, _ = harness.run_program(python, program, tmp_path / "original_again")
    again, _ = harness.run_program(python, migrated, tmp_path / "migrated" / "run")
    queue = [["enqueue_input/random_shuffle_queue", 11, 0]]
    assert first["seeds"] == second["seeds"] == again["seeds"] == queue
    assert first["loss"] != second["loss"]
    assert math.isfinite(again["loss"])
