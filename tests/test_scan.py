"""The text scans that decide, before parsing, whether a file can matter."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from est2tpu.cstutil import walk
from est2tpu.names import ImportTable, dotted
from est2tpu.scan import code_only, known_code, may_spell, remember_code

REPO = Path(__file__).resolve().parents[1]


def test_mentions_in_docstrings_and_comments_are_not_uses() -> None:
    text = (
        "import tensorflow as tf\n"
        'def f():\n    """Use `tf.estimator.Estimator(model_fn)` here."""\n'
        "    # tf.estimator.RunConfig(\n"
        "    return 'tf.estimator.Estimator'\n"
    )
    table = ImportTable({"tf": "tensorflow"})
    assert table.may_use(text, "estimator.Estimator")
    assert not table.uses(text, "estimator.Estimator")
    assert not table.calls(text, "estimator.RunConfig")


def test_uses_in_code_are_seen_however_they_are_laid_out() -> None:
    text = (
        "import tensorflow as tf\n"
        "est = (tf . estimator\n    .Estimator)(model_fn=fn)\n"
        'msg = f"{tf.estimator.RunConfig()}"\n'
    )
    table = ImportTable({"tf": "tensorflow"})
    assert table.uses(text, "estimator.Estimator")
    assert table.calls(text, "estimator.RunConfig")


def test_text_the_tokenizer_cannot_read_is_kept_whole() -> None:
    text = 'x = """never closed\ntf.estimator.Estimator(\n'
    assert code_only(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "x = (tf . estimator  # a comment. with dots\n   .Estimator(model_fn))\n",
        "x = tf.\\\n    estimator.Estimator  (model_fn)\n",
        "x = tf.\\\r\n    estimator.Estimator\r\n(model_fn)\r\n",
        "x = (tf\n#\n  # two comments\n\f .estimator.\tEstimator\n  (model_fn))\n",
        'x = f"{tf.estimator.Estimator(model_fn)}"\n',
        'x = """never closed\ntf.estimator.Estimator(model_fn)\n',
    ],
)
def test_the_raw_text_gate_lets_through_every_layout_code_only_joins(text: str) -> None:
    """may_spell runs before the tokenizer and must never say no where code_only says yes."""
    assert "tf.estimator.Estimator(" in code_only(text)
    assert may_spell(text, ["tf.estimator.Estimator"], "(")
    assert may_spell(text, ["contrib.tpu", "estimator.Estimator"])


def test_the_raw_text_gate_says_no_to_a_last_name_alone() -> None:
    text = "output = layer(tpu)  # tf.contrib\nx = 'tf.contrib'.tpu\n"
    assert not may_spell(text, ["tf.contrib.tpu"])
    assert may_spell(text + "tf.contrib # no\n .tpu\n", ["tf.contrib.tpu"])


def sources() -> list[object]:
    # est2tpu's own (bigger) sources in the full suite only; `make check` reads the fixtures.
    own = sorted(REPO.glob("est2tpu/**/*.py"))
    return sorted((REPO / "fixtures").rglob("*.py")) + [
        pytest.param(p, marks=pytest.mark.slow) for p in own
    ]


@pytest.mark.parametrize("path", sources(), ids=lambda p: p.name)
def test_every_dotted_name_and_call_of_real_code_survives(path: Path) -> None:
    """code_only may only drop text: every name chain and call the parser sees is in it."""
    text = path.read_text(encoding="utf-8")
    module = cst.parse_module(text)
    kept = code_only(text)
    chains: list[str] = []

    class Chains(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if (name := dotted(node)) is not None:
                chains.append(name)

        def visit_Call(self, node: cst.Call) -> None:
            if (name := dotted(node.func)) is not None:
                chains.append(name + "(")

    walk(module, Chains())
    assert [c for c in chains if c not in kept] == []
    # the raw-text gate before the tokenizer lets every one of them through
    calls = [(c[:-1], "(") if c.endswith("(") else (c, "") for c in chains]
    assert [c for c, after in calls if not may_spell(text, [c], after)] == []


def _tokenized_elsewhere(text: str) -> str:
    return code_only(text)


def test_code_a_worker_tokenized_answers_may_spell_exactly() -> None:
    """The index's workers send back the code they tokenized (`remember_code`); the raw
    text's gate then answers from it: no where the spelling is only in a docstring."""
    import multiprocessing

    text = (
        "import tensorflow as tf\n"
        'def g():\n    """Build tf.estimator.Estimator(model_fn) here."""\n'
        "    return tf.estimator.RunConfig()\n"
    )
    assert known_code(text) is None
    assert may_spell(text, ["tf.estimator.Estimator"], "(")  # the raw gate cannot tell
    with multiprocessing.get_context("fork").Pool(1) as pool:
        code = pool.apply(_tokenized_elsewhere, (text,))
    assert known_code(text) is None  # tokenized in the worker only
    remember_code(text, code)
    assert known_code(text) == code
    assert not may_spell(text, ["tf.estimator.Estimator"], "(")
    assert may_spell(text, ["tf.estimator.RunConfig"], "(")
    assert "tf.estimator.RunConfig(" in code_only(text)


@pytest.mark.parametrize(
    "name, data",
    [
        ("skipped.py", b"import os\nprint(os.sep)\n"),
        ("candidate.py", b"import tensorflow as tf\nest = tf.estimator.Estimator(model_fn=f)\n"),
        (
            "skip_file.py",
            b"# est2tpu: skip-file\nimport tensorflow as tf\ntf.estimator.RunConfig()\n",
        ),
        ("wide.py", "x = 'tf.estimator'\n".encode("utf-16")),
    ],
)
def test_a_scan_comes_back_from_a_worker_as_it_was_made(
    tmp_path: Path, name: str, data: bytes
) -> None:
    """What a scanning worker sends (None for a file the pre-filter skipped) is rebuilt in
    the parent into the very result the scan made."""
    from est2tpu import runner
    from est2tpu.ftypes import Target

    path = tmp_path / name
    path.write_bytes(data)
    state = runner.RunState([tmp_path], runner.Settings(Target.TPU_ESTIMATOR, None, (), True))
    sent = runner.scan_sent(state, path)
    assert (sent is None) == (name == "skipped.py")
    assert runner.scan_received(path, sent) == runner.scan_one(state, path)
