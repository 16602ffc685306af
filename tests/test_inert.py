"""Setting inert top-level defs aside (est2tpu/inert.py) changes nothing but the time taken.

Each check runs the same migration three ways: with the defs set aside wherever they can be,
before the parse (`inert.split`, `MIN_LINES = 0`) and again after it (`inert.reduce`,
`MIN_STATEMENTS = 0`), even in a five-line fixture; after the parse only; and never (the plain
engine). It requires the same text, findings and edits.

Where neither `split` nor `reduce` would set anything aside (`could_set_aside`), the three
ways are one code path, and comparing them proves nothing: the fixtures and example projects
are only migrated three ways when they have something to set aside.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import libcst as cst
import pytest

from est2tpu import api, inert, pipeline
from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.engine import too_deep
from est2tpu.ftypes import FileResult, Target
from est2tpu.index import ProjectIndex

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
FIXTURES = data_dir("fixtures")
CASES = sorted(FIXTURES.glob("*/*.before.py")) + sorted(FIXTURES.glob("projects/**/*.py"))

_spec = importlib.util.spec_from_file_location(
    "gen_big_module", REPO / "bench" / "gen_big_module.py"
)
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_big_module"] = gen
_spec.loader.exec_module(gen)


def facts(result: FileResult) -> tuple[object, ...]:
    return (result.status, result.new_text, result.findings, result.edits, result.error)


NEVER = 10**9
# (MIN_LINES, MIN_STATEMENTS): set aside before and after the parse, after it only, never
WAYS = ((0, 0), (NEVER, 0), (NEVER, NEVER))


def facts_with(monkeypatch: pytest.MonkeyPatch, way: tuple[int, int], run: Callable[[], T]) -> T:
    with monkeypatch.context() as m:
        m.setattr(inert, "MIN_LINES", way[0])
        m.setattr(inert, "MIN_STATEMENTS", way[1])
        return run()


def both_ways(
    monkeypatch: pytest.MonkeyPatch, text: str, target: Target
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(set aside before and after the parse, plain), failing at once if setting aside
    after the parse only differs from the plain run."""
    aside, after, plain = (
        facts_with(
            monkeypatch, way, lambda: facts(migrate_source(text, path="m.py", target=target))
        )
        for way in WAYS
    )
    assert after == plain
    return aside, plain


def could_set_aside(texts: list[str]) -> bool:
    """Would `split` or `reduce` set anything aside in any of these modules, with their
    thresholds at 0 (as in `WAYS[0]`)? An over-approximation, made without migrating: an
    empty index and no names mentioned by other modules keep the fewest defs (what the
    index or other modules tie to the rules is only ever kept in addition). When it says no,
    every way runs the plain engine's code path: the migrations are not worth comparing
    (measured: no fixture and no example project has an inert def; comparing them all three
    ways took 163 s of CI's last run, 254 s on a loaded core, for nothing)."""
    return any(_could_set_aside(text) for text in texts)


@functools.cache  # both targets ask about the same texts (a LibCST parse each)
def _could_set_aside(text: str) -> bool:
    """`could_set_aside` for one module."""
    saved = inert.MIN_LINES, inert.MIN_STATEMENTS
    inert.MIN_LINES = inert.MIN_STATEMENTS = 0
    try:
        if inert.split(text, None, too_deep) is not None:
            return True
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            return True  # not ours to judge: compare the ways
        return inert.reduce(module, text, "m.py", ProjectIndex()) is not None
    finally:
        inert.MIN_LINES, inert.MIN_STATEMENTS = saved


def test_could_set_aside_sees_inert_defs() -> None:
    # The shortcut above is only sound if it never says no where a way would set aside.
    assert could_set_aside([big_text()])
    assert could_set_aside([tricky_text("decorator_over_lines")])
    plain = "import tensorflow as tf\n\n\ndef model_fn(f, l, mode):\n    return tf.abs(f)\n"
    assert not could_set_aside([plain])
    helper = "\n\ndef unrelated(x):\n    return x + 1\n"
    assert could_set_aside([plain.replace("\n\n\n", helper + "\n\n", 1)])


@pytest.mark.slow  # every fixture with something to set aside, three ways per target
@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_every_fixture_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch, target: Target
) -> None:
    differ = []
    for path in CASES:
        text = path.read_text(encoding="utf-8")
        if not could_set_aside([text]):
            continue
        aside, plain = both_ways(monkeypatch, text, target)
        if aside != plain:
            differ.append(str(path.relative_to(FIXTURES)))
    assert not differ


HELPERS_AROUND = '''
BATCH = 32


def _scale(x):
    """Called by the model_fn: the tf2 rules follow it by name."""
    return tf.compat.v1.layers.dense(x, 4)


def unrelated(a):
    return os.path.join(a, "x")  # est2tpu: ignore[TPU001]


def uses_estimator_global():
    return ESTIMATOR.evaluate(input_fn)


def model_fn(features, labels, mode, params):
    net = _scale(features["x"])
    loss = tf.compat.v1.losses.mean_squared_error(labels, tf.compat.v1.layers.dense(net, 1))
    train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn(params):
    return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[1.0]])).repeat().batch(BATCH)


@property
def decorated(self):
    # nothing to see
    return 1


ESTIMATOR = tf.estimator.Estimator(model_fn=model_fn)
'''


def big_text() -> str:
    """60 helpers, the generator's model_fn and Estimator, the cases above, 30 helpers."""
    more = "".join(gen.HELPER.format(n=n, m=n % 7) for n in range(1000, 1030))
    return "import os\n" + gen.big_module(60) + HELPERS_AROUND + more


@pytest.mark.slow  # about 5 s each; make check keeps the split's own test below
@pytest.mark.parametrize(
    "newline",
    [pytest.param("\n", id="lf"), pytest.param("\r\n", id="crlf")],
)
@pytest.mark.parametrize(
    "target",
    [
        pytest.param(Target.TPU_ESTIMATOR, id=Target.TPU_ESTIMATOR.value),
        pytest.param(Target.TF2, id=Target.TF2.value),
    ],
)
def test_a_big_module_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch, target: Target, newline: str
) -> None:
    text = big_text().replace("\n", newline)
    aside, plain = both_ways(monkeypatch, text, target)
    assert aside == plain
    assert aside[1] != text  # the Estimator constructs did change


def test_the_helpers_are_set_aside_and_the_rest_kept() -> None:
    text = big_text() + "\n\ndef last():\n    pass\n"
    reduced = inert.reduce(cst.parse_module(text), text, "m.py", ProjectIndex())
    assert reduced is not None
    kept = {
        s.name.value for s in reduced.module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))
    }
    # Tied to TensorFlow, to an import or to a kept statement by name; the last statement.
    assert kept == {
        "model_fn",
        "input_fn",
        "main",
        "_scale",
        "uses_estimator_global",
        "last",
    }
    assert len(reduced.module.body) < 25
    # Same line count: every line the rules report is the original's.
    assert reduced.module.code.count("\n") == text.count("\n")
    assert reduced.restore(reduced.module.code) == text


def test_no_setting_aside_under_a_star_import() -> None:
    text = "from tensorflow import *\n" + gen.big_module(60)
    assert inert.reduce(cst.parse_module(text), text, "m.py", ProjectIndex()) is None
    assert inert.split(text) is None


# Before the parse, Python's parser finds the statements piece by piece: each case puts
# something that could mislead that among the helpers.
TRICKY = {
    "decorator_over_lines": "@functools.lru_cache(\n    maxsize=None\n)\ndef cached(x):\n"
    "    return x * 2\n",
    "statements_on_one_line": "X = 1; Y = 2\n\n\ndef after_x(a):\n    return a + X\n",
    # (no name the helpers use: a kept statement binds every name it mentions)
    "defs_inside_a_string": 'DOC = """\ndef not_a_def(q):\n    return q\nclass NotAClass:\n'
    '    pass\n@decorator\n"""\n',
    "class_and_comments": "class Plain:\n    def method(self):\n        return 3\n"
    "        # after the method's last line\n# between defs\n\n\nasync def coro(x):\n"
    "    return x\n",
    "nested_too_deeply": "def deep(x):\n    return " + "-" * 120 + "x\n",
    "python2_print": 'def old(x):\n    print "x"\n',
    "repeated_keyword": "def twice(f):\n    return f(a=1, a=2)\n",
    "lone_cr": "def cr(x):\n    return x\r\n\rY = 3\n",
    "form_feed": "def ff(x):\n    return x\n\f\ndef gg(y):\n    return y\n",
    "backslash_continuation": "def cont(x):\n    return x + \\\n        1\n",
    # compiles alone, not under the module's `from __future__ import annotations`
    "future_annotations": "def ann(x: (q := 1)) -> None:\n    return None\n",
}


# Left whole to the engine, which fails them (or reports them) as it always has.
NOT_SPLIT = {
    "nested_too_deeply",
    "python2_print",
    "repeated_keyword",
    "future_annotations",
    "lone_cr",
    "form_feed",
}


def tricky_text(case: str) -> str:
    helpers = "".join(gen.HELPER.format(n=n, m=n % 7) for n in range(1000, 1010))
    head = "from __future__ import annotations\n" if case.startswith("future") else ""
    return head + "import functools\n" + gen.big_module(20) + helpers + TRICKY[case] + helpers


@pytest.mark.slow  # each a module of helpers, migrated three ways
@pytest.mark.parametrize("case", sorted(TRICKY))
def test_tricky_modules_give_the_same_results(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    text = tricky_text(case)
    aside, plain = both_ways(monkeypatch, text, Target.TPU_ESTIMATOR)
    assert aside == plain
    with monkeypatch.context() as m:
        m.setattr(inert, "MIN_LINES", 0)
        assert (inert.split(text, None, too_deep) is None) == (case in NOT_SPLIT)


def test_split_sets_the_helpers_aside_before_the_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inert, "MIN_LINES", 0)
    text = big_text() + "\n\ndef last():\n    pass\n"
    split = inert.split(text, lambda names: {"helper_3"} & set(names))
    assert split is not None
    kept = set(re.findall(r"^(?:def|class) (\w+)", split.text, re.MULTILINE))
    # As `reduce`, and the helper another module mentions.
    assert kept == {"model_fn", "input_fn", "main", "_scale", "uses_estimator_global", "last"} | {
        "helper_3"
    }
    assert split.text.count("\n") == text.count("\n")
    assert split.restore(split.text) == text
    assert len(cst.parse_module(split.text).body) < 40


BIG_PY = '''"""Input functions for the estimator, among helpers."""
import numpy as np
{helpers}

def batches(batch_size=32):
    features = {{"x": np.zeros((64, 4), np.float32)}}
    labels = np.zeros((64,), np.int32)
    return features, labels
{helpers}'''

TRAINER_PY = """import tensorflow as tf
from big import batches


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    estimator = tf.estimator.Estimator(model_fn=model_fn)
    estimator.train(batches, steps=10)
"""


def project_facts(
    monkeypatch: pytest.MonkeyPatch, way: tuple[int, int], root: Path, target: Target
) -> list[tuple[object, ...]]:
    def run() -> list[tuple[object, ...]]:
        return [facts(r) for r in api.migrate_paths([root], target=target, jobs=1)]

    return facts_with(monkeypatch, way, run)


@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_a_def_another_module_uses_is_never_set_aside(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: Target
) -> None:
    """big.py's `batches` says nothing the rules look for, but trainer.py's Estimator trains
    with it: the index makes it an input function, which the rules read (tpu-estimator: it
    batches nothing, TPU005 says so there, and the Estimator stays, TPU007)."""
    helpers = "".join(gen.HELPER.format(n=n, m=n % 7) for n in range(30))
    (tmp_path / "big.py").write_text(BIG_PY.format(helpers=helpers), encoding="utf-8")
    (tmp_path / "trainer.py").write_text(TRAINER_PY, encoding="utf-8")
    aside, after, plain = (project_facts(monkeypatch, way, tmp_path, target) for way in WAYS)
    assert aside == after == plain
    if target is Target.TPU_ESTIMATOR:
        big = next(
            r
            for r in api.migrate_paths([tmp_path], target=target, jobs=1)
            if Path(r.path).name == "big.py"
        )
        text = (tmp_path / "big.py").read_text(encoding="utf-8")
        line = text.splitlines().index("def batches(batch_size=32):") + 1
        assert [(f.rule_id, f.position.line) for f in big.findings] == [("TPU005", line)]
        # Without the names other modules mention, the split would lose that.
        monkeypatch.setattr(pipeline, "_mentioned", lambda state, cid, names: set())
        assert project_facts(monkeypatch, WAYS[0], tmp_path, target) != plain


@pytest.mark.slow  # every example project with something to set aside, three ways per target
@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_every_project_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch, target: Target
) -> None:
    differ = []
    for root in sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir()):
        if not could_set_aside([p.read_text(encoding="utf-8") for p in root.rglob("*.py")]):
            continue
        aside, after, plain = (project_facts(monkeypatch, way, root, target) for way in WAYS)
        if not aside == after == plain:
            differ.append(root.name)
    assert not differ


def test_a_module_of_tensorflow_defs_is_not_even_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    """TensorFlow's own big modules: nearly every def uses it, so Python's parse of the
    pieces would be spent for nothing (`_worth_trying` says so from the text)."""
    monkeypatch.setattr(inert, "MIN_LINES", 0)
    tf_helpers = "".join(
        f"\n\ndef op_{n}(x):\n    return array_ops.identity(x) + {n}\n" for n in range(60)
    )
    text = "from tensorflow.python.ops import array_ops\nimport numpy as np\n" + tf_helpers

    def never(*args: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(inert, "_units", never)
    assert inert.split(text) is None
    # while a module of numpy helpers is
    with pytest.raises(AssertionError, match="parsed"):
        inert.split(text.replace("array_ops.identity(x)", "np.abs(x)"))


def tf_big_text() -> str:
    """The generator's module with helpers that call TensorFlow, the cases above, and defs
    that spell TensorFlow names some rule reads, each among plain TensorFlow helpers."""
    more = "".join(gen.TF_HELPER.format(n=n, m=n % 7) for n in range(1000, 1030))
    return "import os\n" + gen.big_module(60, tf_helpers=True) + HELPERS_AROUND + READ + more


# Defs no kept statement names, each spelling a TensorFlow name a rule or the index reads.
READ = """

class SlowOptimizer(tf.compat.v1.train.GradientDescentOptimizer):
    pass


def summaries(x):
    tf.compat.v1.summary.scalar("x", x)
    return tf.nn.relu(x)


def alias_chain(x):
    layers = tf.compat.v1 \\
        .layers
    return (tf
            .nn
            .relu(x))


def passes_the_module(x):
    return getattr(tf, "nn").relu(x)
"""


def test_reads_name_knows_what_the_rules_compare_with() -> None:
    for name in ("nn.relu", "multiply", "clip_by_value", "math.multiply"):
        assert not inert.reads_name(name), name
    for name in (
        "estimator.Estimator",  # spelled whole
        "train.AdamOptimizer",  # "train." starts it, "Optimizer" ends it
        "compat.v1.train.MomentumOptimizer",
        "layers.dense",
        "summary.scalar",
        "data.Dataset.from_tensor_slices",
        "float64",
        "",  # the module itself, passed around
    ):
        assert inert.reads_name(name), name


@pytest.mark.parametrize(
    ("code", "plain"),
    [
        ("def f(x):\n    return tf.nn.relu(tf.multiply(x, 2))\n", {"tf"}),
        ("def f(x):\n    return tf.compat.v1.nn.relu(x)\n", {"tf"}),
        ("def f(x):\n    return nn.relu(x)\n", {"nn"}),  # from tensorflow import nn
        ("def f(x):\n    return (tf\n        .nn\n        .relu(x))\n", {"tf"}),
        ("def f(x):\n    return tf.nn.relu(x) + tf.train.AdamOptimizer(1)\n", set()),
        ("def f(x):\n    return tf.nn.relu(x), tf\n", set()),  # the module passed on
        # the chain goes on past a comment or a continuation: it may be any name
        ("def f(x):\n    return (tf.nn  # a comment\n        .relu(x))\n", set()),
        ("def f(x):\n    return tf.nn \\\n        .relu(x)\n", set()),
        ("def f(self):\n    return self.tf.estimator\n", set()),  # not the binding
    ],
)
def test_plain_tf_counts_only_chains_no_rule_reads(code: str, plain: set[str]) -> None:
    bound = {"tf": "tensorflow", "nn": "tensorflow.nn"}
    assert inert.plain_tf(code, bound) == plain


def test_tensorflow_helpers_are_set_aside_before_the_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(inert, "MIN_LINES", 0)
    text = tf_big_text()
    split = inert.split(text, None, too_deep)
    assert split is not None
    kept = set(re.findall(r"^(?:def|class) (\w+)", split.text, re.MULTILINE))
    # every helper but the module's last statement (where LibCST adds the final newline)
    assert {name for name in kept if name.startswith("helper_")} == {"helper_1029"}
    assert {"SlowOptimizer", "summaries", "alias_chain", "passes_the_module"} <= kept
    assert split.restore(split.text) == text


@pytest.mark.slow  # about 5 s each
@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_a_module_of_tensorflow_helpers_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch, target: Target
) -> None:
    text = tf_big_text()
    aside, plain = both_ways(monkeypatch, text, target)
    assert aside == plain
    assert aside[1] != text


def test_without_the_sources_every_name_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed as bytecode only, est2tpu has no words to judge by: nothing is plain."""
    monkeypatch.setattr(inert, "_vocabulary", lambda: (frozenset(), frozenset()))
    inert.reads_name.cache_clear()
    try:
        assert inert.reads_name("nn.relu")
        assert (
            inert.plain_tf("def f(x):\n    return tf.nn.relu(x)\n", {"tf": "tensorflow"}) == set()
        )
    finally:
        inert.reads_name.cache_clear()
