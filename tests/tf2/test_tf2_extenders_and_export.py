"""`tf.estimator.add_metrics`, the serving input receiver builders, model_fn histogram and
text summaries, and `tf.contrib.learn`'s CSV loaders under the tf2 facade.

`programs/add_metrics_and_export.py`, on TF 2.15 as written and on current TensorFlow
migrated with `--target tf2` (no finding): the evaluation (the model_fn's rmse and loss and
the two metric_fns' mae and mean_x), the predictions of the SavedModels exported with
`build_raw_serving_input_receiver_fn` and `build_parsing_serving_input_receiver_fn`, and the
summary tags written in model_dir. Measured equal to the printed float32 digits; asserted
within 1e-5 relative.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Target

PROGRAM = Path(__file__).with_name("programs") / "add_metrics_and_export.py"


@pytest.mark.tf
def test_add_metrics_exports_and_summaries_match_the_original(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    result = migrate_source(PROGRAM.read_text(), target=Target.TF2, path=str(PROGRAM))
    assert result.new_text is not None
    assert result.findings == [], [f.render() for f in result.findings]
    assert "tf2_runtime.add_metrics(estimator, mae)" in result.new_text
    # The metric_fns run inside the model_fn: their TF1 metrics became the facade's.
    assert "tf2_runtime.metrics.mean_absolute_error(" in result.new_text
    original_program = tmp_path / "original.py"
    shutil.copy(PROGRAM, original_program)
    migrated_program = tmp_path / "migrated.py"
    migrated_program.write_text(result.new_text)

    original = harness.run_program(harness.tf_python(), original_program, tmp_path / "original")[0]
    migrated = harness.run_program(tfcur, migrated_program, tmp_path / "migrated")[0]

    assert sorted(original["metrics"]) == ["global_step", "loss", "mae", "mean_x", "rmse"]
    assert sorted(migrated["metrics"]) == sorted(original["metrics"])
    for key, want in original["metrics"].items():
        assert migrated["metrics"][key] == pytest.approx(want, rel=1e-5), key
    for export in ("raw", "parsing"):
        assert migrated[export] == pytest.approx(original[export], rel=1e-5), export
    assert original["raw"] == original["parsing"]
    assert original["tags"] == ["loss", "mode_name", "predictions"]
    assert migrated["tags"] == original["tags"]


# TensorFlow 1.15's `contrib/learn/python/learn/datasets/base.py` on these files gives the
# values below (its code read with the search tool; the runtime's is the same NumPy calls).
_CSV_PROBE = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import est2tpu.runtime.tf2 as tf2_runtime

    work = sys.argv[1]
    with open(os.path.join(work, "with.csv"), "w") as f:
        f.write("3,2,setosa,versicolor\\n1.5,2,0\\n3,4.25,1\\n-1,0,2\\n")
    with open(os.path.join(work, "without.csv"), "w") as f:
        f.write("7,1.5,2\\n8,-3,4\\n")
    with_header = tf2_runtime.datasets.load_csv_with_header(
        os.path.join(work, "with.csv"), target_dtype=np.int32, features_dtype=np.float32
    )
    without = tf2_runtime.datasets.load_csv_without_header(
        os.path.join(work, "without.csv"), target_dtype=np.float64, features_dtype=np.float32,
        target_column=0,
    )
    print(json.dumps({
        "type": type(with_header).__name__, "fields": list(with_header._fields),
        "with": [with_header.data.tolist(), str(with_header.data.dtype),
                 with_header.target.tolist(), str(with_header.target.dtype)],
        "without": [without.data.tolist(), str(without.data.dtype),
                    without.target.tolist(), str(without.target.dtype)],
    }))
    """
)


@pytest.mark.tf
def test_contrib_learn_csv_loaders(tfcur: str, tmp_path: Path, harness: ModuleType) -> None:
    proc = subprocess.run(
        [tfcur, "-c", _CSV_PROBE, str(tmp_path)],
        env=harness.tf_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["type"] == "Dataset" and report["fields"] == ["data", "target"]
    assert report["with"] == [[[1.5, 2.0], [3.0, 4.25], [-1.0, 0.0]], "float32", [0, 1, 2], "int32"]
    assert report["without"] == [[[1.5, 2.0], [-3.0, 4.0]], "float32", [7.0, 8.0], "float64"]


GRADIENTS_PROGRAM = Path(__file__).with_name("programs") / "compute_apply_gradients.py"


@pytest.mark.tf
def test_compute_clip_apply_gradients_train_like_the_original(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    """`programs/compute_apply_gradients.py`: compute_gradients, clip_by_global_norm (active
    from the first step), apply_gradients. Measured on the default strategy: loss 0.7297625
    (TF 2.15) against 0.72976226 (facade), 0.7297626 with XLA; mae equal. Asserted within
    1e-5 relative (1e-4 with XLA). Under several replicas the clipping acts on each
    replica's gradients before they are summed, as TF1's optimizers did under a strategy
    (and TPUEstimator's CrossShardOptimizer does), so it is not compared with one device."""
    result = migrate_source(
        GRADIENTS_PROGRAM.read_text(), target=Target.TF2, path=str(GRADIENTS_PROGRAM)
    )
    assert result.new_text is not None
    assert result.findings == [], [f.render() for f in result.findings]
    assert "tf2_runtime.train.MomentumOptimizer(" in result.new_text
    original_program = tmp_path / "original.py"
    shutil.copy(GRADIENTS_PROGRAM, original_program)
    migrated_program = tmp_path / "migrated.py"
    migrated_program.write_text(result.new_text)

    def run(python: str, program: Path, name: str, extra: dict[str, str]) -> dict[str, float]:
        work = tmp_path / name
        proc = subprocess.run(
            [python, str(program), str(work / "model"), str(work / "results.json")],
            env=harness.tf_env(extra),
            capture_output=True,
            text=True,
            timeout=500,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        report: dict[str, float] = json.loads((work / "results.json").read_text())
        return report

    original = run(harness.tf_python(), original_program, "original", {})
    migrated = run(tfcur, migrated_program, "migrated", {})
    xla = run(tfcur, migrated_program, "xla", {"EST2TPU_JIT_COMPILE": "1"})
    assert original["global_step"] == 30.0
    for got, rel in ((migrated, 1e-5), (xla, 1e-4)):
        assert sorted(got) == sorted(original)
        for key, want in original.items():
            assert got[key] == pytest.approx(want, rel=rel), key
