"""Whole-project tracing of model_fns where the module a name means depends on
where the importing file is: several trainers in one repository, each with its own
`trainer/model.py`, and a package migrated from below its root."""

from __future__ import annotations

from pathlib import Path

from est2tpu import api
from est2tpu.ftypes import FileResult, Status

MODEL = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features) * {scale}
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.no_op())
"""

TASK = """\
import tensorflow as tf
{import_line}


def main(model_dir):
    estimator = tf.estimator.Estimator(model_fn=model.model_fn, model_dir=model_dir)
    return estimator
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _results(*paths: Path) -> dict[str, FileResult]:
    results = {}
    for result in api.migrate_paths(list(paths), jobs=1):
        assert result.status is not Status.FAILED, result.error
        results[result.path.as_posix()] = result
    return results


def _result(results: dict[str, FileResult], suffix: str) -> FileResult:
    (hit,) = [r for path, r in results.items() if path.endswith(suffix)]
    return hit


def test_each_trainer_of_a_monorepo_uses_its_own_model(tmp_path: Path) -> None:
    files: dict[str, str] = {}
    for project, scale in (("churn", 1.0), ("fraud", 2.0), ("energy", 3.0)):
        files[f"{project}/trainer/__init__.py"] = ""
        files[f"{project}/trainer/model.py"] = MODEL.format(scale=scale)
        files[f"{project}/trainer/task.py"] = TASK.format(
            import_line="import trainer.model as model"
        )
    _write(tmp_path, files)
    results = _results(tmp_path)
    for project in ("churn", "fraud", "energy"):
        task = _result(results, f"{project}/trainer/task.py")
        model = _result(results, f"{project}/trainer/model.py")
        assert "TPUEstimator(" in (task.new_text or ""), task.findings
        assert "TPUEstimatorSpec(" in (model.new_text or ""), model.findings
        assert not [f for f in task.findings + model.findings if f.rule_id == "TPU007"]


def test_a_name_no_nearby_file_claims_stays_unresolved(tmp_path: Path) -> None:
    # Two `model.py` claim the name, and neither sits where `import model` in tools/task.py
    # can reach it (its directory, or a package root above it): nothing is guessed.
    _write(
        tmp_path,
        {
            "churn/model.py": MODEL.format(scale=1.0),
            "fraud/model.py": MODEL.format(scale=2.0),
            "tools/task.py": TASK.format(import_line="import model"),
        },
    )
    results = _results(tmp_path / "churn", tmp_path / "fraud", tmp_path / "tools")
    task = _result(results, "tools/task.py")
    assert "TPUEstimator(" not in (task.new_text or "")
    assert [f.rule_id for f in task.findings] == ["TPU007"]


def test_the_import_root_that_holds_the_importer_wins(tmp_path: Path) -> None:
    # app/task.py runs with app/ on sys.path: `import model` is app/model.py, not the
    # app/sub/model.py that a second root also names `model`.
    _write(
        tmp_path,
        {
            "app/task.py": TASK.format(import_line="import model"),
            "app/model.py": MODEL.format(scale=1.0),
            "app/sub/model.py": MODEL.format(scale=2.0),
        },
    )
    results = _results(tmp_path / "app", tmp_path / "app" / "sub")
    assert "TPUEstimator(" in (_result(results, "app/task.py").new_text or "")
    assert "TPUEstimatorSpec(" in (_result(results, "app/model.py").new_text or "")
    assert "TPUEstimatorSpec(" not in (_result(results, "sub/model.py").new_text or "")


def test_package_import_from_below_the_package_root(tmp_path: Path) -> None:
    # `est2tpu migrate magenta/models/onsets` names the files `model`, `task`; the code
    # imports `magenta.models.onsets.model`: the file beside task.py in that directory.
    pkg = tmp_path / "magenta" / "models" / "onsets"
    _write(
        pkg,
        {
            "model.py": MODEL.format(scale=1.0),
            "task.py": TASK.format(import_line="from magenta.models.onsets import model"),
        },
    )
    results = _results(pkg)
    assert "TPUEstimator(" in (_result(results, "onsets/task.py").new_text or "")
    assert "TPUEstimatorSpec(" in (_result(results, "onsets/model.py").new_text or "")


def test_package_import_elsewhere_is_not_the_sibling(tmp_path: Path) -> None:
    # The directory is not the imported package's: `other.pkg.model` is some installed
    # module, not the model.py next to task.py.
    app = tmp_path / "app"
    _write(
        app,
        {
            "model.py": MODEL.format(scale=1.0),
            "task.py": TASK.format(import_line="from other.pkg import model"),
        },
    )
    results = _results(app)
    task = _result(results, "app/task.py")
    assert "TPUEstimator(" not in (task.new_text or "")
    assert [f.rule_id for f in task.findings] == ["TPU007"]


def test_specs_of_a_kept_estimator_are_explained_where_it_is(tmp_path: Path) -> None:
    # The Estimator in task.py stays as it is (its params use the reserved key "context"):
    # TPU007 says why there, and model.py's EstimatorSpec, right for it, points there.
    _write(
        tmp_path,
        {
            "model.py": MODEL.format(scale='params["context"]'),
            "task.py": "import tensorflow as tf\nimport model\n\n"
            'estimator = tf.estimator.Estimator(model.model_fn, params={"context": 2.0})\n',
        },
    )
    results = _results(tmp_path)
    task, model = _result(results, "/task.py"), _result(results, "/model.py")
    assert [f.rule_id for f in task.findings] == ["TPU007"]
    assert "reserves" in task.findings[0].message
    assert [(f.rule_id, f.position.line) for f in model.findings] == [("TPU014", 6)]
    assert "whose Estimator stays as it is (in task.py;" in model.findings[0].message
    assert not model.changed


def test_sagemaker_script_is_one_finding_even_when_big(tmp_path: Path) -> None:
    # Over est2tpu.inert's threshold the rules see the module with its untouched defs set
    # aside: the finding is the same (TPU014 reads which defs exist from the text).
    helpers = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(45))
    script = (
        "import numpy as np\nimport tensorflow as tf\n"
        + helpers
        + "\n\ndef model_fn(features, labels, mode, params):\n"
        "    loss = tf.reduce_mean(features)\n"
        "    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.no_op())\n"
        "\n\ndef train_input_fn(training_dir, params):\n"
        "    return np.load(training_dir)\n"
    )
    _write(tmp_path, {"entry.py": script})
    result = _result(_results(tmp_path), "/entry.py")
    assert [f.rule_id for f in result.findings] == ["TPU014"], result.findings
    assert "SageMaker's legacy TensorFlow script contract" in result.findings[0].message
    assert "model_fn and train_input_fn" in result.findings[0].message


def test_package_copied_out_of_its_tree(tmp_path: Path) -> None:
    # The package's modules sit in a directory not named after it (`vendored/`), and refer
    # to each other by the package's name: task.py -> onsets.model, onsets.layers;
    # model.py -> onsets.layers. A reader sees the package; so does est2tpu.
    copy = tmp_path / "vendored"
    _write(
        copy,
        {
            "layers.py": "SCALE = 2.0\n",
            "model.py": "from magenta.onsets import layers\n\n"
            + MODEL.format(scale="layers.SCALE"),
            "task.py": TASK.format(
                import_line="from magenta.onsets import layers, model\n\nassert layers.SCALE"
            ),
        },
    )
    results = _results(copy)
    task, model = _result(results, "vendored/task.py"), _result(results, "vendored/model.py")
    assert "TPUEstimator(" in (task.new_text or ""), [f.render() for f in task.findings]
    assert "TPUEstimatorSpec(" in (model.new_text or ""), [f.render() for f in model.findings]
    assert not task.findings + model.findings


def test_two_imports_of_an_unrelated_package_are_not_a_copy_of_it(tmp_path: Path) -> None:
    # task.py imports model and utils of some installed package, and the directory happens
    # to hold a model.py and a utils.py: no module of the directory imports that package
    # itself, so nothing says the directory is it.
    app = tmp_path / "app"
    _write(
        app,
        {
            "utils.py": "SCALE = 2.0\n",
            "model.py": MODEL.format(scale=1.0),
            "task.py": TASK.format(import_line="from other.pkg import model, utils"),
            "serve.py": "from other.pkg import utils\n",
        },
    )
    results = _results(app)
    task = _result(results, "app/task.py")
    assert "TPUEstimator(" not in (task.new_text or "")
    assert [f.rule_id for f in task.findings] == ["TPU007"]
