"""The fast pipeline (pool, lazy index, unparsed inert files) gives the reference's results.

The reference (the all-parsed pipeline) runs once per target per worker and costs as much as
a fast run: each target's tests are one xdist group, so the runs of a target share its
reference, and the two targets can run on different workers.

The fast pipeline runs in a pool for each target over every fixture (what a user gets by
default: one worker per core), and, with the options, in a pool over the options tree and in
this process (`jobs=1`) over one folder of it (`test_same_results_with_options_in_the_workers`).
What only the in-process run can get wrong is target- and tree-blind: `runner._sequential`,
and each result being migrated in place before its stored form is restored onto it (in the
pool the parent's result only gets the stored form). What a target changes (its rules,
their `applies` for the inert files, the index following helpers for tf2) runs in the same
`pipeline.finish_one` in both, and the pool run of each target holds that to its reference.
The in-process run over every fixture for tf2 (about 80 s of the suite) is what this
replaced: the options tree has the example projects and three rule folders, and the
in-process run takes one of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from oracle import migrate_all_parsed

from est2tpu import api, pipeline, scan
from est2tpu.ftypes import FileResult, Status, Target

REPO = Path(__file__).resolve().parents[1]


def _run(target: Target, jobs: int) -> object:
    # Each target's reference is built once, in the worker that runs that target's tests.
    mode = "pool" if jobs > 1 else "serial"
    return pytest.param(
        target,
        jobs,
        marks=pytest.mark.xdist_group(f"test_parallel-{target.value}"),
        id=f"{mode}-{target.value}",
    )


RUNS = [_run(Target.TPU_ESTIMATOR, 2), _run(Target.TF2, 2)]


def facts(results: list[FileResult]) -> list[tuple[object, ...]]:
    return [
        (str(r.path), r.status, r.old_text, r.new_text, r.findings, r.edits, r.error, r.encoding)
        for r in results
    ]


def build_mixed_tree(root: Path, copies: int = 1, folders: tuple[str, ...] = ()) -> Path:
    """Every fixture and e2e project, plus files that pass the byte pre-filter but that no rule
    touches, a syntax error among them and a suppression.

    One copy: results are per file, so a second copy of the same files only repeats the same
    per-file work (it doubled these tests' time), and the one copy already has what copies
    were for: modules of the same name in different folders (`train.py` in twelve projects,
    each fixture's `.before.py` and `.after.py` in every rule folder) and enough files
    (about 200) for the pool to split them into many chunks. `folders`: only these folders
    of fixtures/ (default: all)."""
    for n in range(copies):
        if not folders:
            shutil.copytree(
                REPO / "fixtures", root / f"copy{n}", ignore=shutil.ignore_patterns("*.md")
            )
        for folder in folders:
            shutil.copytree(
                REPO / "fixtures" / folder,
                root / f"copy{n}" / folder,
                ignore=shutil.ignore_patterns("*.md"),
            )
    inert = root / "inert"
    inert.mkdir()
    for n in range(40):
        (inert / f"io{n}.py").write_text(f"def model_fn_{n}(x):\n    return x  # a model_fn\n")
    (inert / "broken.py").write_text("def model_fn(:\n    pass\n")
    (inert / "py2.py").write_text('# model_fn\nprint "x"\n')
    (inert / "no_newline.py").write_text("model_fn = 1\n    ")
    (inert / "suppressed.py").write_text("model_fn = 1  # est2tpu: ignore[TPU001]\n")
    (inert / "aliased.py").write_text(
        "from tensorflow import (estimator as\n    est)\nrc = est.RunConfig()\n"
    )
    (inert / "commented.py").write_text(
        "from tensorflow.estimator import (  # a ) in a comment\n    RunConfig,\n)\n"
        "rc = RunConfig()\n"
    )
    return root


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_mixed_tree(tmp_path_factory.mktemp("mixed"))


@pytest.fixture(scope="module")
def reference(mixed: Path) -> Callable[[Target], list[tuple[object, ...]]]:
    """The all-parsed pipeline's results over `mixed`, run once per target for the module:
    it is the oracle, and one run of it costs as much as a fast run."""
    runs: dict[Target, list[tuple[object, ...]]] = {}

    def of(target: Target) -> list[tuple[object, ...]]:
        if target not in runs:
            runs[target] = facts(list(migrate_all_parsed([mixed], target=target)))
        return runs[target]

    return of


@pytest.mark.parametrize(("target", "jobs"), RUNS)
@pytest.mark.slow
def test_same_results_as_the_reference_pipeline(
    mixed: Path,
    reference: Callable[[Target], list[tuple[object, ...]]],
    target: Target,
    jobs: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the index needs parsed is asked in the workers too (a user's run does that from
    # `pipeline._MIN_NEEDED_TASKS` candidates on; this tree has fewer).
    monkeypatch.setattr(pipeline, "_MIN_NEEDED_TASKS", 1)
    fast = list(api.migrate_paths([mixed], target=target, jobs=jobs))
    assert len(fast) > 150
    assert facts(fast) == reference(target)


# What the options act on: the example projects (every rule, modules across files), the
# ignored rule's fixtures, and two folders holding files the per-file ignores match (named a*:
# TF2001 is not selected, TPU004 is). The pool tests above show every fixture the same with
# and without workers. TPU007's 111 fixtures are left out of this tree: the example projects'
# Estimators meet --no-runtime in TPU007 already, and its one a* file is ignored as TPU004's.
OPTIONS_TREE = ("projects", "TPU003", "TPU004", "TF2001")
# The in-process run (`runner._sequential`) is blind to the tree (see the module docstring):
# it runs over one folder of it, against a reference over that folder.
SERIAL_FOLDER = "TPU004"


@pytest.mark.slow
def test_same_results_with_options_in_the_workers(tmp_path: Path) -> None:
    # Selection, --no-runtime and per-file ignores in one run: each changes what the workers
    # do, and the reference honours each of them on its own.
    tree = build_mixed_tree(tmp_path, folders=OPTIONS_TREE)

    def ignores(path: Path) -> list[str]:
        return ["TPU"] if path.name.startswith("a") else []

    kwargs = {
        "select": ["TPU00"],
        "ignore": ["TPU003"],
        "use_runtime": False,
        "per_file_ignores": ignores,
    }
    # In two workers over the tree, then in this process over one folder of it.
    for root, jobs, many in ((tree, 2, 150), (tree / "copy0" / SERIAL_FOLDER, 1, 50)):
        reference = list(migrate_all_parsed([root], **kwargs))  # type: ignore[arg-type]
        fast = list(api.migrate_paths([root], jobs=jobs, **kwargs))  # type: ignore[arg-type]
        assert len(fast) > many  # in the pool: many chunks for the two workers
        assert facts(fast) == facts(reference), jobs
        assert not any(f.rule_id == "TPU003" for r in fast for f in r.findings)
        # the per-file ignore reached the workers: a fixture TPU004 rewrites is left as it was
        adam = next(r for r in fast if r.path.name == "adam_in_model_fn.before.py")
        assert adam.new_text == adam.old_text
        # ... and only that one: the selected rules rewrote others
        assert any(r.new_text != r.old_text for r in fast if r.path.parent.name == "TPU004")


def test_broken_files_no_rule_acts_on_are_left_unread(mixed: Path) -> None:
    # as a file the pre-filter skips (tests/test_unread_files.py): in the pool too
    by_name = {r.path.name: r for r in api.migrate_paths([mixed / "inert"], jobs=2)}
    for name in ("broken.py", "py2.py"):
        result = by_name[name]
        assert (result.status, result.error) == (Status.UNCHANGED, None)
        assert result.new_text == result.old_text == (mixed / "inert" / name).read_text()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("import os\n", [], id="no_tensorflow"),
        pytest.param("import tensorflow as tf\n", [("tf", "tensorflow")], id="alias"),
        pytest.param(
            "import tensorflow.compat.v1\n", [("tensorflow", "tensorflow")], id="dotted_plain"
        ),
        pytest.param(
            "from tensorflow import (a,\n  b as c)\n",
            [("a", "tensorflow.a"), ("c", "tensorflow.b")],
            id="parenthesised",
        ),
        pytest.param(
            "from tensorflow import \\\n  estimator\n",
            [("estimator", "tensorflow.estimator")],
            id="backslash",
        ),
        pytest.param(
            "x = 1; import tensorflow as tf\n", [("tf", "tensorflow")], id="after_semicolon"
        ),
        # `from . import tensorflow` is seen as `import tensorflow`: over, never under.
        pytest.param(
            "from tensorflow import *\nfrom . import tensorflow\n",
            [("tensorflow", "tensorflow")],
            id="star_relative_overapproximated",
        ),
        pytest.param("from tensorflow import (a,  # note\n  b)\n", None, id="comment_in_list"),
    ],
)
def test_import_scan(text: str, expected: list[tuple[str, str]] | None) -> None:
    assert scan.import_pairs(text) == expected


def _square_after_parent_work(state: list[str], item: int) -> int:
    return item * item


@pytest.mark.parametrize("cost", [None, lambda item: -item], ids=["in-order", "by-cost"])
def test_pool_runs_the_parents_own_work_beside_the_workers(
    cost: Callable[[int], int] | None,
) -> None:
    """`runner.pmap(meanwhile=...)`: called once, in this process, after the workers got
    their items (the CLI imports LibCST there while the workers scan); the results keep
    the items' order. Without workers it is not called: the caller does that work anyway."""
    from est2tpu import runner

    done: list[str] = []
    items = list(range(40))
    out = runner.pmap(
        _square_after_parent_work,
        done,
        items,
        2,
        min_tasks=1,
        cost=cost,
        meanwhile=lambda: done.append("parent"),
    )
    assert out == [i * i for i in items]
    assert done == ["parent"]
    out = runner.pmap(
        _square_after_parent_work,
        done,
        items,
        1,
        min_tasks=1,
        meanwhile=lambda: done.append("again"),
    )
    assert out == [i * i for i in items]
    assert done == ["parent"]
