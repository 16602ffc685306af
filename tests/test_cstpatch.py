"""LibCST's codemods (and with them `libcst.matchers`, 0.6 s of CPU to import) are loaded
only by a run that migrates a parsed file; the stand-ins of `est2tpu.cstpatch` behave as
LibCST's classes, patched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Runs the CLI in this process, then says which of LibCST's modules it imported.
RUN = textwrap.dedent(
    """
    import json, sys
    from est2tpu.cli import main
    sys.argv = ["est2tpu", *sys.argv[1:]]
    try:
        main()
    except SystemExit:
        pass
    print(json.dumps({m: m in sys.modules for m in ("libcst", "libcst.matchers")}))
    """
)


def run(*args: str, cwd: Path) -> tuple[dict[str, bool], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    *out, loaded = done.stdout.strip().splitlines()
    return json.loads(loaded), "\n".join(out)


# TPU014 reports the subclass from Python's own tree: an Estimator of tensorflow_estimator's
# private modules, which the project index does not read.
REPORT_ONLY = """\
from tensorflow_estimator.python.estimator import estimator


class Mine(estimator.Estimator):
    pass
"""

MIGRATED = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn)
"""


def test_a_run_that_parses_nothing_never_imports_the_matchers(tmp_path: Path) -> None:
    (tmp_path / "left.py").write_text(REPORT_ONLY)
    (tmp_path / "plain.py").write_text("import tensorflow as tf\nprint(tf.add(1, 2))\n")
    loaded, out = run("check", "--no-cache", "-f", "json", str(tmp_path), cwd=tmp_path)
    findings = [f["rule"] for f in json.loads(out)["findings"]]
    assert findings == ["TPU014"]  # reported from Python's own tree
    assert loaded == {"libcst": True, "libcst.matchers": False}


# Parsed and run through the rules, which refuse it whole: no rule schedules an import.
REFUSED = """\
import tensorflow as tf

from data import make_input


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn)
est.train(make_input(), steps=10)
"""


def test_a_run_whose_rules_schedule_no_import_never_imports_them(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(REFUSED)
    loaded, out = run("check", "--no-cache", "-f", "json", str(tmp_path / "train.py"), cwd=tmp_path)
    report = json.loads(out)
    assert sorted(f["rule"] for f in report["findings"]) == ["TPU005", "TPU007"]
    assert [f["status"] for f in report["files"]] == ["unchanged"]
    assert loaded == {"libcst": True, "libcst.matchers": False}


def test_a_run_that_migrates_loads_them_and_adds_the_imports(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(MIGRATED)
    loaded, out = run("migrate", "--no-cache", "--diff", str(tmp_path / "train.py"), cwd=tmp_path)
    assert loaded == {"libcst": True, "libcst.matchers": True}
    assert "+import est2tpu.runtime as" in out  # added by AddImportsVisitor
    assert "TPUEstimator" in out


def test_the_stand_ins_are_libcst_classes_patched_when_first_used() -> None:
    code = textwrap.dedent(
        """
        import sys
        from est2tpu import cstpatch
        assert "libcst.matchers" not in sys.modules
        context = cstpatch.CodemodContext(filename="m.py")
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor
        from libcst.matchers import _visitors
        assert type(context) is CodemodContext and isinstance(context, cstpatch.CodemodContext)
        assert cstpatch.AddImportsVisitor.CONTEXT_KEY == AddImportsVisitor.CONTEXT_KEY
        cstpatch.AddImportsVisitor.add_needed_import(context, "os")
        assert context.scratch[AddImportsVisitor.CONTEXT_KEY]
        assert _visitors._gather_matchers.__name__ == "gather_once"  # patched
        light = cstpatch.RuleContext("m.py")  # what a rule's pass holds
        cstpatch.schedule_import(light, "tensorflow", asname="tf")
        cstpatch.schedule_removal(light, "os")
        codemod = light.codemod_context()
        assert type(codemod) is CodemodContext and codemod.filename == "m.py"
        assert codemod.scratch is light.scratch
        assert [(i.module_name, i.alias) for i in AddImportsVisitor._get_imports_from_context(
            codemod
        )] == [("tensorflow", "tf")]
        cstpatch.load()  # once: not wrapped again
        assert _visitors._gather_matchers.__closure__[0].cell_contents.__name__ == (
            "_gather_matchers"
        )
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr
