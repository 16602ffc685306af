"""TPU014 and TF2004 in the whole pipeline, and the corpus runner's detector that holds them.

bench/corpus.py measures est2tpu on released Estimator code with a detector that shares no
code with est2tpu; the same detector checks every rule fixture (in
tests/test_all_rules.py::test_all_rules_over_fixture, which migrates each fixture with all
the rules of each target once for all its checks) and, here, the example projects: nothing a
target cannot keep may be left without a finding on its statement.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from inprocess import est2tpu as est2tpu_in_process

from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.ftypes import Target

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("est2tpu_corpus", ROOT / "bench" / "corpus.py")
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules["est2tpu_corpus"] = corpus
_spec.loader.exec_module(corpus)

FIXTURES = data_dir("fixtures")
CASES = sorted(p for p in FIXTURES.glob("*/*.before.py") if p.parent.name != "projects")
TARGETS = {"tpu-estimator": Target.TPU_ESTIMATOR, "tf2": Target.TF2}

UNTRACEABLE = """\
import tensorflow as tf


def run(model_fn):
    return tf.estimator.Estimator(model_fn=lambda features, labels, mode: model_fn(features, labels, mode))
"""


@pytest.mark.parametrize(("target", "other"), [("tpu-estimator", "TPU007"), ("tf2", "TF2001")])
def test_quiet_where_another_rule_explained_the_line(target: str, other: str) -> None:
    result = migrate_source(UNTRACEABLE, target=TARGETS[target])
    assert [f.rule_id for f in result.findings if f.position.line == 5] == [other]


def test_the_detector_sees_what_is_left() -> None:
    facts, left = corpus.analyse(UNTRACEABLE, Path("m.py"), "tpu-estimator")
    assert facts.builds_estimator and facts.uses_api
    assert [(c.kind, c.line) for c in left] == [("Estimator", 5)]
    _, left = corpus.analyse(
        "from tensorflow_estimator.python.estimator import estimator as e\n"
        "class A(e.Estimator):\n    pass\n",
        Path("m.py"),
        "tf2",
    )
    assert [(c.kind, c.line) for c in left] == [("import of an Estimator-only module", 1)]


@pytest.mark.slow  # the corpus runner: three CLI runs per project
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_example_projects_hold_the_corpus_targets(
    target: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The corpus runner itself, over our example projects: no crash, every output compiles,
    # a second run changes nothing, and every file with a model_fn or an Estimator is handled.
    # Its 48 CLI runs per target (check, migrate, check per project) go through the same typer
    # app in this process (tests/inprocess.py), not 48 interpreters that import LibCST: an
    # internal error raises here with its traceback. The CLI as a process (exit codes,
    # signals, pipes, `python -m`) is tested in tests/test_hostile_cli.py and test_cli.py.
    # One target per test: the two halves can run on the two workers of the suite.
    #
    # With a results cache instead of the runner's --no-cache (which is for timing cold
    # runs): `migrate` takes the first `check`'s results of the same files instead of
    # computing them again, as a user's `check` then `migrate` does (tests/test_cache.py
    # holds cached results to fresh ones); the re-check computes what `migrate` changed.
    cache = tmp_path / "cache"

    def cached(*args: str) -> object:
        argv = [a for a in args if a != "--no-cache"]
        return est2tpu_in_process(*argv[:1], "--cache-dir", str(cache), *argv[1:])

    monkeypatch.setattr(corpus, "est2tpu", cached)
    code = corpus.main(["--tree", str(FIXTURES / "projects"), "--target", target])
    out = capsys.readouterr().out
    assert code == 0, out
    totals = [line for line in out.splitlines() if line.startswith("| **all**")]
    assert len(totals) == 1, out
    cells = [c.strip() for c in totals[0].strip("|").split("|")]
    assert cells[6:9] == ["0", "0", "0"], totals[0]  # crashes, not compiling, 2nd run
    handled, of = cells[9].split(" ")[0], cells[3]
    assert int(of) >= 10 and handled == of, totals[0]
