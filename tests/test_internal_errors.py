"""Internal errors: a bug that fires on one file fails that file alone, untouched, exit 2.

Bugs are injected by monkeypatching a rule (or the index) in-process and running the real
CLI through Typer's CliRunner; no plugin hook or environment variable is involved.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from oracle import migrate_all_parsed
from typer.testing import CliRunner

from est2tpu import api
from est2tpu.cli import app
from est2tpu.ftypes import Status
from est2tpu.project.build import Indexer
from est2tpu.rules.tpu006_tpu_estimator_spec import TpuEstimatorSpec

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"

GOOD = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    for name in ("a.py", "boom.py", "c.py"):
        (tmp_path / name).write_text(GOOD)
    return tmp_path


def on_boom(
    monkeypatch: pytest.MonkeyPatch, method: str, make: Callable[[Any, Any, Any], Any]
) -> None:
    """Replace TpuEstimatorSpec.<method> with `make(self, original_node, updated_node)` on
    boom.py only; every other file gets the real method."""
    real = getattr(TpuEstimatorSpec, method)

    def patched(self: TpuEstimatorSpec, original: Any, updated: Any) -> Any:
        if Path(self.state.path).name == "boom.py":
            return make(self, original, updated)
        return real(self, original, updated)

    monkeypatch.setattr(TpuEstimatorSpec, method, patched)


def run(tree: Path) -> tuple[int, str, dict[str, bytes]]:
    result = CliRunner().invoke(app, ["migrate", "."])
    assert "Traceback" not in result.output
    files = {p.name: p.read_bytes() for p in tree.glob("*.py")}
    return result.exit_code, result.stderr, files


def assert_only_boom_failed(code: int, stderr: str, files: dict[str, bytes], reason: str) -> None:
    assert code == 2, stderr
    errors = [line for line in stderr.splitlines() if ": error: " in line]
    assert errors == [f"boom.py: error: {reason}"] or (
        len(errors) == 1 and errors[0].startswith(f"boom.py: error: {reason}")
    ), stderr
    assert files["boom.py"] == GOOD.encode()
    for name in ("a.py", "c.py"):
        assert b"TPUEstimator(" in files[name], name
        assert f"migrated {name}" in stderr


def test_rule_that_raises_fails_only_its_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Any, original: Any, updated: Any) -> Any:
        raise RuntimeError("injected bug")

    on_boom(monkeypatch, "leave_Call", boom)
    code, stderr, files = run(tree)
    assert_only_boom_failed(code, stderr, files, "internal error: RuntimeError: injected bug")


def test_rule_whose_output_does_not_compile_fails_only_its_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LibCST happily renders `f(mode=mode, mode=mode)`; the compile() check must catch it."""

    def duplicate_args(self: Any, original: cst.Call, updated: cst.Call) -> Any:
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "EstimatorSpec":
            return updated.with_changes(
                func=updated.func.with_changes(attr=cst.Name("TPUEstimatorSpec")),
                args=[*updated.args, updated.args[0]],
            )
        return updated

    on_boom(monkeypatch, "leave_Call", duplicate_args)
    code, stderr, files = run(tree)
    assert_only_boom_failed(
        code, stderr, files, "internal error: the migrated code does not compile"
    )


def test_rule_that_never_converges_fails_only_its_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def one_more_line(self: Any, original: cst.Call, updated: cst.Call) -> Any:
        # A different call every pass: the fixpoint is never reached.
        return cst.BinaryOperation(updated, cst.Add(), cst.Integer("0"))

    on_boom(monkeypatch, "leave_Call", one_more_line)
    code, stderr, files = run(tree)
    assert_only_boom_failed(code, stderr, files, "internal error: the rules did not converge")


def test_rule_that_recurses_without_end_is_an_internal_error_with_its_id(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's runaway recursion on shallow code is a bug of that rule, not
    "nested too deeply"."""

    def forever(self: Any, original: Any, updated: Any) -> Any:
        return forever(self, original, updated)

    on_boom(monkeypatch, "leave_Call", forever)
    code, stderr, files = run(tree)
    assert_only_boom_failed(code, stderr, files, "internal error: TPU006 recursed without end")
    assert "nested too deeply" not in stderr


def test_recursion_on_deeply_nested_code_is_blamed_on_the_nesting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def forever(self: Any, original: Any, updated: Any) -> Any:
        return forever(self, original, updated)

    on_boom(monkeypatch, "leave_Call", forever)
    deep = "x = " + "[" * 80 + "]" * 80 + "\n"
    result = api.migrate_source(GOOD + deep, path="boom.py")
    assert result.status is Status.FAILED
    assert result.error is not None
    assert result.error.startswith("cannot migrate: code nested too deeply for the rules (8")
    result = api.migrate_source(GOOD, path="boom.py")
    assert result.error is not None and result.error.startswith("internal error: TPU006")


def test_migrate_source_reports_internal_error_and_keeps_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(self: Any, original: Any, updated: Any) -> Any:
        raise KeyError("injected")

    on_boom(monkeypatch, "leave_Call", boom)
    result = api.migrate_source(GOOD, path="boom.py")
    assert result.status is Status.FAILED
    assert result.error == "internal error: KeyError: 'injected'"
    assert result.new_text == GOOD
    assert result.findings == []


def test_indexer_failure_on_one_file_keeps_the_others_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the indexer chokes on adds no roles, and must not shift the others' names.

    Cross-module resolution (task.py builds the Estimator from trainer.model.model_fn)
    needs every other file registered under its own module name.
    """
    root = tmp_path / "proj"
    shutil.copytree(PROJECTS / "two_module_trainer", root)
    (root / "trainer" / "aaa_first.py").write_text("import tensorflow as tf\nx = 'estimator'\n")
    expected = {r.path.name: r.new_text for r in api.migrate_paths([root])}

    real = Indexer.source

    def source(path: str, module: cst.Module, names: Any, *rest: Any) -> Any:
        if path.endswith("aaa_first.py"):
            raise RuntimeError("injected indexer bug")
        return real(path, module, names, *rest)

    monkeypatch.setattr(Indexer, "source", staticmethod(source))
    got = {r.path.name: r for r in api.migrate_paths([root])}
    for name in ("model.py", "task.py"):
        assert got[name].new_text == expected[name], name


def test_index_build_failure_does_not_end_the_run(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(self: Indexer) -> Any:
        raise RuntimeError("injected index bug")

    monkeypatch.setattr(Indexer, "build", build)
    result = CliRunner().invoke(app, ["migrate", "."])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    assert "internal error" in result.stderr
    assert {p.read_text() for p in tree.glob("*.py")} == {GOOD}


def test_index_failure_fails_the_files_that_needed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No all-parsed fallback: the files fail with the index's reason (a file that was not
    parsed before the index may fail with it rather than its parse error), each parsed at
    most once, and none is written."""
    from est2tpu import engine

    root = tmp_path / "proj"
    shutil.copytree(PROJECTS / "two_module_trainer", root)
    (root / "broken.py").write_text("import tensorflow as tf\ndef f(:\n    tf.estimator\n")
    (root / "plain.py").write_text("x = 1\n")

    def build(self: Indexer) -> Any:
        raise RuntimeError("injected index bug")

    monkeypatch.setattr(Indexer, "build", build)
    parsed: list[int] = []
    real_parse = engine.parse

    def parse(text: str) -> cst.Module:
        parsed.append(1)
        return real_parse(text)

    monkeypatch.setattr(engine, "parse", parse)
    got = list(api.migrate_paths([root], jobs=1))
    assert len(parsed) <= len(got)
    monkeypatch.setattr(engine, "parse", real_parse)
    reference = list(migrate_all_parsed([root]))
    assert sorted((r.path, r.status) for r in got) == sorted((r.path, r.status) for r in reference)
    by_name = {r.path.name: r for r in got}
    assert by_name["plain.py"].status is Status.SKIPPED
    assert by_name["broken.py"].status is Status.FAILED
    for name in ("model.py", "task.py"):
        assert by_name[name].status is Status.FAILED
        assert "the project index failed: RuntimeError: injected index bug" in (
            by_name[name].error or ""
        )
        assert by_name[name].new_text == by_name[name].old_text
