"""Generated code in the file's own style (`est2tpu/layout.py`): added imports where the
file's sorted import block puts them, as ruff's isort rule (I001) checks it, and long lines
the migration made wrapped at the file's or the project's line length. Checked with the
real ruff over the fixtures' expected outputs and over programs migrated by the CLI."""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from inprocess import est2tpu

from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.ftypes import Target
from est2tpu.layout import configured_line_length, place_imports, wrap_long_lines

FIXTURES = data_dir("fixtures")


def _ruff(folder: Path, *args: str) -> list[dict[str, object]]:
    """ruff's diagnostics (JSON) for the files of `folder`, run from inside it."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--output-format", "json", *args, "."],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


def _migrate(text: str, target: Target = Target.TPU_ESTIMATOR, **kwargs: object) -> str:
    result = migrate_source(text, path="program.py", target=target, **kwargs)  # type: ignore[arg-type]
    assert result.new_text is not None and result.new_text != text, result.error
    compile(result.new_text, "program.py", "exec", dont_inherit=True)
    again = migrate_source(result.new_text, path="program.py", target=target, **kwargs)  # type: ignore[arg-type]
    assert again.new_text == result.new_text, "a second run must change nothing"
    return result.new_text


def _unsorted(tmp_path: Path, **programs: str) -> set[str]:
    """The names of `programs` that ruff's I001 finds unsorted (isolated from this
    repository's configuration, where `est2tpu` would be first party); `trainer` is the
    project's own package, first party."""
    (tmp_path / "trainer").mkdir(exist_ok=True)
    (tmp_path / "trainer" / "__init__.py").write_text("", encoding="utf-8")
    for name, text in programs.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    return {Path(str(d["filename"])).stem for d in _ruff(tmp_path, "--isolated", "--select", "I")}


def test_fixture_outputs_stay_sorted_where_their_inputs_were(tmp_path: Path) -> None:
    pairs = sorted(FIXTURES.glob("*/*.after.py"))
    for after in pairs:
        name = f"{after.parent.name}__{after.name[: -len('.after.py')]}"
        shutil.copy(
            after.with_name(after.name.replace(".after.", ".before.")),
            tmp_path / f"{name}__before.py",
        )
        shutil.copy(after, tmp_path / f"{name}__after.py")
    unsorted = {
        Path(str(d["filename"])).stem for d in _ruff(tmp_path, "--isolated", "--select", "I")
    }
    sorted_inputs = [p for p in tmp_path.glob("*__before.py") if p.stem not in unsorted]
    assert len(sorted_inputs) > 100  # most fixtures start sorted: the check is not vacuous
    broken = [
        p.stem[: -len("__before")]
        for p in sorted_inputs
        if p.stem.replace("__before", "__after") in unsorted
    ]
    assert not broken, broken


TRAINER = '''\
"""A trainer with the three sections isort makes."""
# Section comments stay with their imports.
import argparse
import os

import numpy as np
import tensorflow as tf

from trainer import data


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(data.arrays(np.float32))
    return dataset.repeat().batch(32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", default=os.environ.get("MODEL_DIR"))
    args = parser.parse_args()
    estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir=args.model_dir)
    estimator.train(input_fn, max_steps=10)
'''


def test_added_import_joins_the_third_party_section(tmp_path: Path) -> None:
    new = _migrate(TRAINER)
    head = new[: new.index("\n\n\ndef ")]
    assert head.splitlines()[4:10] == [
        "",
        "import est2tpu.runtime as tpu_runtime",
        "import numpy as np",
        "import tensorflow as tf",
        "",
        "from trainer import data",
    ]
    assert not _unsorted(tmp_path, before=TRAINER, after=new)


def test_placing_is_a_no_op_on_what_it_placed() -> None:
    new = _migrate(TRAINER)
    assert place_imports(TRAINER, new) == new
    assert wrap_long_lines(TRAINER, new, 79) == new


def test_added_imports_make_the_sections_they_need(tmp_path: Path) -> None:
    """`--no-runtime` adds `import os`: a standard-library section above the third-party
    one; `from` imports alone in a section come after the added `import` line."""
    only_tf = TRAINER.replace("import argparse\nimport os\n\n", "").replace(
        'os.environ.get("MODEL_DIR")', '"/tmp/model"'
    )
    only_tf = only_tf.replace(
        "import numpy as np\nimport tensorflow as tf\n", "import tensorflow as tf\n"
    )
    only_tf = only_tf.replace("np.float32", '"float32"')
    new = _migrate(only_tf, use_runtime=False)
    assert "import os\n\nimport tensorflow as tf\n\nfrom trainer import data\n" in new
    from_only = TRAINER.replace("import tensorflow as tf\n", "from tensorflow import estimator\n")
    from_only = from_only.replace("tf.estimator.", "estimator.")
    from_new = _migrate(from_only)
    assert (
        "import numpy as np\nimport tensorflow as tf\nfrom tensorflow import estimator\n"
        in from_new
    )
    tf2 = _migrate(TRAINER, target=Target.TF2)
    assert "import est2tpu.runtime.tf2 as tf2_runtime\nimport numpy as np\n" in tf2
    unsorted = _unsorted(tmp_path, no_runtime=new, from_only=from_new, tf2=tf2, before=only_tf)
    assert not unsorted, unsorted


def test_a_crlf_file_keeps_crlf_in_what_is_placed_and_wrapped() -> None:
    crlf = TRAINER.replace("import argparse\nimport os\n\n", "").replace("\n", "\r\n")
    new = _migrate(crlf)
    assert "\r\nimport est2tpu.runtime as tpu_runtime\r\n" in new
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(\r\n" in new
    plain = _migrate(crlf, use_runtime=False)  # `import os`: a section, a blank line
    assert "\r\nimport os\r\n\r\nimport numpy as np\r\n" in plain
    for text in (new, plain):
        assert "\n" not in text.replace("\r\n", "")


def test_a_block_that_is_not_sorted_keeps_the_import_at_its_end() -> None:
    mixed = TRAINER.replace(
        "import argparse\nimport os\n\nimport numpy as np\nimport tensorflow as tf\n",
        "import tensorflow as tf\nimport argparse\nimport numpy as np\nimport os\n",
    )
    new = _migrate(mixed)
    assert "\n\nfrom trainer import data\nimport est2tpu.runtime as tpu_runtime\n\n\n" in new


def test_place_imports_leaves_a_notebook_cell_boundary() -> None:
    source = "# __est2tpu_cell__ 0\nimport tensorflow as tf\n# __est2tpu_cell__ 1\nimport os\n"
    new = source + "import est2tpu.runtime as tpu_runtime\n"
    assert place_imports(source, new) == new


TWO_SPACES = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
  logits = tf.compat.v1.layers.dense(features["x"], 1)
  loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
  return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[1.0]])).repeat().batch(4)


def main(model_dir, summaries):
  if summaries:
    est = tf.estimator.Estimator(model_fn=model_fn, model_dir=model_dir, params={})
    est.train(input_fn, steps=1)
"""


def test_long_lines_wrap_in_the_files_indentation() -> None:
    new = _migrate(TWO_SPACES)
    limit = max(79, max(len(line) for line in TWO_SPACES.splitlines()))
    new_lines = set(new.splitlines()) - set(TWO_SPACES.splitlines())
    assert all(len(line) <= limit for line in new_lines), [
        line for line in new_lines if len(line) > limit
    ]
    # Wrapped by the rule (TPU007, which adds the arguments) and after it (TPU005's
    # drop_remainder, TPU006's spec): two spaces deeper, as the file indents.
    assert "    est = tf.compat.v1.estimator.tpu.TPUEstimator(\n      model_fn=model_fn,\n" in new
    assert '.batch(\n    params["batch_size"],\n    drop_remainder=' in new
    assert "TPUEstimatorSpec(\n    mode,\n    loss=loss,\n    train_op=train_op,\n  )\n" in new


def test_wrap_long_lines_leaves_what_it_cannot_split() -> None:
    source = "x = 1\n"
    fstring = 'x = f"{g(aaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, ccccccccc)}"\n'
    generator = "x = sum(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa for aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa in range(10000000))\n"
    chain = (
        "x = tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2.something_long_enough_to\n"
    )
    for new in (fstring, chain):
        assert wrap_long_lines(source, new, 79) == new
    # The generator's own parentheses are the call's: only the call inside it is wrapped.
    assert wrap_long_lines(source, generator, 79).startswith(generator[:60])
    comment = "y = g(aaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb)  # a comment stays after\n"
    assert wrap_long_lines(source, comment, 79) == (
        "y = g(\n    aaaaaaaaaaaaaaaaaaaaaaaaaaaa,\n    bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb,\n"
        ")  # a comment stays after\n"
    )
    assert wrap_long_lines(comment, comment, 79) == comment  # the original's own lines stay


def test_configured_line_length_is_read_from_the_projects_linter_config(tmp_path: Path) -> None:
    program = tmp_path / "pkg" / "train.py"
    program.parent.mkdir()
    program.write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 72\n", encoding="utf-8")
    assert configured_line_length(str(program)) == 72
    (tmp_path / "pyproject.toml").write_text("[tool.black]\n", encoding="utf-8")
    assert configured_line_length(str(program)) == 88
    (tmp_path / "pkg" / "ruff.toml").write_text("line-length = 64\n", encoding="utf-8")
    assert configured_line_length(str(program)) == 64
    assert configured_line_length("-") is None
    assert configured_line_length(str(tmp_path / "missing.py")) is None


def test_one_runs_answers_by_folder_are_each_files_own_answer(tmp_path: Path) -> None:
    """A run asks for every file with one `seen`: each folder's configuration is read once,
    and every file still gets the length of the configuration nearest above it, whatever
    the order it is asked in and however its path is spelled (relative, through a symlink,
    with `..`)."""
    for folder, config in {
        "a": ("ruff.toml", "line-length = 72\n"),
        "a/b/c": ("pyproject.toml", "[tool.black]\nline-length = 100\n"),
        "d": ("setup.cfg", "[pycodestyle]\n"),
        "e": None,
    }.items():
        (tmp_path / folder).mkdir(parents=True)
        if config is not None:
            (tmp_path / folder / config[0]).write_text(config[1], encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path / "a" / "b")
    files = ["a/b/c/deep.py", "a/b/mid.py", "a/top.py", "d/x.py", "e/y.py", "a/b/c/other.py"]
    for name in files:
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    spellings = [str(tmp_path / name) for name in files] + [
        str(tmp_path / "link" / "mid.py"),
        str(tmp_path / "link" / "c" / "deep.py"),
        str(tmp_path / "e" / ".." / "a" / "top.py"),
        str(tmp_path / "a" / "missing.py"),
    ]
    alone = [configured_line_length(path) for path in spellings]
    assert alone == [100, 72, 72, 79, None, 100, 72, 100, 72, None]
    for order in (spellings, spellings[::-1]):
        seen: dict[str, int | None] = {}
        assert [configured_line_length(path, seen) for path in order] == [
            alone[spellings.index(path)] for path in order
        ]


def test_cli_wraps_at_the_configured_length_and_ruff_agrees(tmp_path: Path) -> None:
    """A project whose ruff config sets 60 columns and passes `ruff check --select I,E501`
    still passes it after `est2tpu migrate`; a changed length is a cache miss."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.ruff]\nline-length = 60\n[tool.ruff.lint.isort]\nknown-third-party = ["est2tpu"]\n',
        encoding="utf-8",
    )
    program = textwrap.dedent(
        """\
        import os

        import tensorflow as tf

        layers = tf.compat.v1.layers
        losses = tf.compat.v1.losses


        def model_fn(features, labels, mode, params):
            logits = layers.dense(features["x"], 1)
            loss = losses.mean_squared_error(labels, logits)
            sgd = tf.compat.v1.train.GradientDescentOptimizer(0.1)
            train_op = sgd.minimize(loss)
            return tf.estimator.EstimatorSpec(
                mode, loss=loss, train_op=train_op
            )


        def input_fn():
            x = {"x": [[1.0]]}
            data = tf.data.Dataset.from_tensors((x, [[1.0]]))
            return data.repeat().batch(4)


        def main():
            model_dir = os.environ["MODEL_DIR"]
            est = tf.estimator.Estimator(model_fn, model_dir)
            est.train(input_fn, steps=1)
        """
    )
    (project / "train.py").write_text(program, encoding="utf-8")
    assert not _ruff(project, "--select", "I,E501")
    done = est2tpu("migrate", project)
    assert done.returncode in (0, 1), done.stderr
    migrated = (project / "train.py").read_text(encoding="utf-8")
    assert migrated != program
    assert not _ruff(project, "--select", "I,E501"), migrated
    compile(migrated, "train.py", "exec", dont_inherit=True)
    assert est2tpu("migrate", "--diff", project).returncode == 0  # a second run: nothing

    (project / "train.py").write_text(program, encoding="utf-8")
    (project / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n", encoding="utf-8")
    est2tpu("migrate", project)
    wide = (project / "train.py").read_text(encoding="utf-8")
    assert wide != migrated and len(wide.splitlines()) < len(migrated.splitlines())


def test_a_multi_line_calls_long_line_splits_into_its_arguments() -> None:
    """Arguments added to the last line of a call laid out over several lines (the hanging
    style, and the end of a dict argument) each get a line, at that line's indentation; a
    closing `)` stays after the last one, as the call had it."""
    source = textwrap.dedent(
        """\
        est = Estimator(model_fn=model_fn,
                        config=config)
        spec = Spec(mode, params={
            "a": 1,
        })
        """
    )
    new = source.replace(
        "config=config)", "config=config, use_tpu=use_tpu(), train_batch_size=FLAGS.batch_size)"
    ).replace("})", "}, use_tpu=tpu_runtime.use_tpu(), train_batch_size=FLAGS.train_batch_size)")
    assert wrap_long_lines(source, new, 60) == textwrap.dedent(
        """\
        est = Estimator(model_fn=model_fn,
                        config=config,
                        use_tpu=use_tpu(),
                        train_batch_size=FLAGS.batch_size)
        spec = Spec(mode, params={
            "a": 1,
        },
        use_tpu=tpu_runtime.use_tpu(),
        train_batch_size=FLAGS.train_batch_size)
        """
    )


def test_a_generated_defs_parameters_go_one_per_line() -> None:
    source = "def model_fn(features, labels, mode, params):\n    pass\n"
    names = ", ".join(f"tensor_number_{i}" for i in range(8))
    new = source + f"    def metric_fn({names}):\n        return {{}}\n"
    wrapped = wrap_long_lines(source, new, 79)
    assert "    def metric_fn(\n        tensor_number_0,\n" in wrapped
    assert "        tensor_number_7,\n    ):\n        return {}\n" in wrapped
    compile(wrapped, "x.py", "exec")
    typed = new.replace("tensor_number_7", "tensor_number_7: int")
    assert wrap_long_lines(source, typed, 79) == typed  # not what the rules write: left


def test_update_fixtures_tells_a_layout_change_from_a_code_change() -> None:
    """scripts/update_fixtures.py's review: an output whose imports moved and whose calls
    were wrapped is `layout only`; one whose code changed is not."""
    spec = importlib.util.spec_from_file_location(
        "update_fixtures", Path(__file__).resolve().parent.parent / "scripts" / "update_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    old = (FIXTURES / "TPU009" / "summaries_to_host_call.before.py").read_text(encoding="utf-8")
    new = _migrate(old)
    placed = new.replace(
        "import est2tpu.runtime as tpu_runtime\nimport tensorflow as tf\n",
        "import tensorflow as tf\nimport est2tpu.runtime as tpu_runtime\n",
    )
    laid_out_again = ast.unparse(ast.parse(new))  # the same code, one line per statement
    assert script._code(new) == script._code(placed) == script._code(laid_out_again)
    assert script._code(new) != script._code(new.replace("host_call=host_call", "host_call=None"))
