"""Notebooks written for Datalab / AI Platform: magic cells are left alone, the rest migrates.

Each fixture in `tests/notebooks/` is a real notebook (`name.before.ipynb`) and its reviewed
migration (`name.after.ipynb`); the CLI runs on a copy, in this process (tests/inprocess.py),
and in a subprocess as a user runs it for the issue's report.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from inprocess import est2tpu

from est2tpu.notebook import load, whole_cell_magic

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
HARNESS = Path(__file__).resolve().parent / "e2e" / "harness.py"
CASES = sorted(p.name.removesuffix(".before.ipynb") for p in NOTEBOOKS.glob("*.before.ipynb"))


def est2tpu_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args], capture_output=True, text=True, check=False
    )


def source(cell: dict[str, object]) -> str:
    text = cell["source"]
    return "".join(text) if isinstance(text, list) else str(text)


def magic_cells(raw: str) -> list[int]:
    cells = json.loads(raw)["cells"]
    return [
        i
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "code" and whole_cell_magic(source(cell)) is not None
    ]


def source_json(raw: str, index: int) -> str:
    """The exact JSON text of one cell's source."""
    start, end = load(raw.encode("utf-8")).spans[("cells", index, "source")]
    return raw[start:end]


@pytest.mark.parametrize("name", CASES)
def test_magic_cell_left_byte_for_byte_and_the_rest_migrated(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.ipynb"
    shutil.copyfile(NOTEBOOKS / f"{name}.before.ipynb", path)
    before = path.read_text(encoding="utf-8")
    done = est2tpu("migrate", str(path))
    # migrate exits 1 when a finding is left: only the `%%writefile` of Estimator code has one.
    finding = name == "cell_magic_writefile_estimator_python"
    assert done.returncode == int(finding), done.stdout + done.stderr
    assert ("E2T002" in done.stderr) is finding
    after = path.read_text(encoding="utf-8")
    assert after == (NOTEBOOKS / f"{name}.after.ipynb").read_text(encoding="utf-8")
    [magic] = magic_cells(before)
    assert source_json(after, magic) == source_json(before, magic)
    cells = [source(c) for c in json.loads(after)["cells"]]
    assert "TPUEstimatorSpec(" in "".join(cells) and "TPUEstimator(" in cells[-1]
    # The runtime import goes into the first Python cell, never into a magic cell.
    first_python = min(
        i
        for i, c in enumerate(json.loads(after)["cells"])
        if c["cell_type"] == "code" and i != magic
    )
    assert cells[first_python].startswith("import est2tpu.runtime as tpu_runtime")
    # A second run is a no-op.
    again = est2tpu("migrate", str(path))
    assert again.returncode == int(finding) and path.read_text(encoding="utf-8") == after


def test_bash_cell_between_the_model_fn_and_the_estimator_cells(tmp_path: Path) -> None:
    """The issue's report: one `%bash` cell failed the whole notebook; the model_fn before it
    and the Estimator after it are one program again."""
    name = "datalab_bash_between_model_fn_and_estimator"
    path = tmp_path / "nb.ipynb"
    shutil.copyfile(NOTEBOOKS / f"{name}.before.ipynb", path)
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    kinds = [source(c).split("\n", 1)[0] for c in cells]
    bash = kinds.index("%bash")
    assert kinds[bash - 1].startswith("def model_fn") and kinds[-1].startswith("estimator =")
    done = est2tpu_process("check", str(path))
    assert done.returncode == 1, done.stdout + done.stderr  # would change; no error
    assert "error" not in done.stdout + done.stderr
    assert est2tpu_process("migrate", str(path)).returncode == 0
    new = [source(c) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    assert (
        new[bash]
        == "%bash\ngcloud config set project $PROJECT\ngcloud config set compute/region us-central1"
    )
    assert "TPUEstimatorSpec(" in new[bash - 1]
    assert "TPUEstimator(" in new[-1] and "train_batch_size=32" in new[-1]
    compile("\n".join(c for i, c in enumerate(new) if i != bash and i != 0), "nb", "exec")


@pytest.mark.parametrize(
    "cell",
    [
        " !gcloud ml-engine versions list --model mnist",
        "\n  %ls -la \\\n    models",
        "\t!echo one\n!echo two",
    ],
)
def test_an_indented_shell_line_opening_a_cell_keeps_the_notebook(
    tmp_path: Path, cell: str
) -> None:
    """IPython drops the indentation of a cell's first line, so ` !gcloud ...` runs; the
    notebook migrates and that cell stays byte for byte."""
    nb = json.loads((NOTEBOOKS / "datalab_sh.before.ipynb").read_text(encoding="utf-8"))
    nb["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": cell.splitlines(keepends=True),
        },
    )
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    done = est2tpu("migrate", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    new = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert source(new[-1]) == cell
    assert any("TPUEstimator(" in source(c) for c in new)


def fails_on_cell_2(tmp_path: Path, nb: dict[str, object]) -> None:
    """`est2tpu migrate` of the notebook fails on its second cell and leaves it byte for byte."""
    path = tmp_path / "nb.ipynb"
    raw = json.dumps(nb, indent=1)
    path.write_text(raw, encoding="utf-8")
    done = est2tpu("migrate", str(path))
    assert done.returncode == 2
    assert f"{path}: error: cannot parse cell 2:" in done.stdout + done.stderr
    assert path.read_text(encoding="utf-8") == raw


def test_an_indented_python_line_after_an_indented_shell_line_still_fails(
    tmp_path: Path,
) -> None:
    nb = json.loads((NOTEBOOKS / "datalab_sh.before.ipynb").read_text(encoding="utf-8"))
    nb["cells"].insert(
        1,
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": [" !ls\n", " x = 1"],
        },
    )
    fails_on_cell_2(tmp_path, nb)


def test_crlf_cells_get_crlf_in_the_lines_added(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    shutil.copyfile(NOTEBOOKS / "crlf_cell_sources.before.ipynb", path)
    assert est2tpu("migrate", str(path)).returncode == 0
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            for line in cell["source"][:-1]:
                assert line.endswith("\r\n"), line


def test_writefile_cell_holding_estimator_python_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    shutil.copyfile(NOTEBOOKS / "cell_magic_writefile_estimator_python.before.ipynb", path)
    done = est2tpu("check", "--output-format", "json", str(path))
    findings = json.loads(done.stdout)
    found = [
        f
        for f in (findings if isinstance(findings, list) else findings["findings"])
        if f.get("rule") == "E2T002" or f.get("rule_id") == "E2T002"
    ]
    assert len(found) == 1, done.stdout
    text = est2tpu("check", str(path))
    assert (
        f"{path}:cell 6:1:1: E2T002 `%%writefile` cell left as it is" in text.stdout + text.stderr
    )
    assert "est2tpu migrate trainer/model.py" in text.stdout + text.stderr
    quiet = est2tpu("check", "--ignore", "E2T002", str(path))
    assert "E2T002" not in quiet.stdout + quiet.stderr


@pytest.mark.parametrize(
    "magic",
    [
        pytest.param(
            "%%writefile trainer/util.py\nimport os\nprint(os.sep)\n", id="python_without_estimator"
        ),
        pytest.param(
            "%%bash\necho 'tf.estimator.Estimator(model_fn=model_fn)'\n",
            id="shell_naming_estimator",
        ),
        pytest.param("%bigquery\nSELECT estimator FROM t\n", id="sql"),
    ],
)
def test_magic_cells_without_estimator_python_are_no_finding(tmp_path: Path, magic: str) -> None:
    nb = json.loads((NOTEBOOKS / "datalab_sh.before.ipynb").read_text(encoding="utf-8"))
    [index] = magic_cells(json.dumps(nb))
    nb["cells"][index]["source"] = magic
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    done = est2tpu("migrate", str(path))
    assert done.returncode == 0 and "E2T" not in done.stdout + done.stderr
    assert source(json.loads(path.read_text(encoding="utf-8"))["cells"][index]) == magic


def test_a_python_2_cell_still_fails_the_notebook(tmp_path: Path) -> None:
    nb = json.loads((NOTEBOOKS / "datalab_sh.before.ipynb").read_text(encoding="utf-8"))
    nb["cells"][1]["source"].append('\nprint "training on", PROJECT')
    fails_on_cell_2(tmp_path, nb)


@pytest.mark.parametrize(
    ("text", "magic"),
    [
        ("%bash\ngcloud config list", "%bash"),
        ("%sh\nls", "%sh"),
        ("%writefile model.py\nimport tensorflow", "%writefile model.py"),
        ("%bigquery --project p\nSELECT 1", "%bigquery --project p"),
        ("%%bash\nls", "%%bash"),
        ("\n\n%%writefile -a m.py\nx = 1", "%%writefile -a m.py"),
        ("%matplotlib inline\nimport tensorflow as tf", None),
        ("%tensorflow_version 1.x\nimport tensorflow as tf", None),
        ("%load_ext autoreload\n%autoreload 2", None),
        ("%pip install tensorflow==1.15\nimport tensorflow", None),
        ("%%time\nx = 1", None),
        ("!pip install tensorflow\nimport tensorflow", None),
        ("x = 1\n%bash", None),
    ],
)
def test_which_first_lines_make_a_whole_cell_magic(text: str, magic: str | None) -> None:
    assert whole_cell_magic(text) == magic


def harness() -> ModuleType:
    name = "est2tpu_e2e_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HARNESS)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# Runs a notebook's Python cells (the magic cells are what a kernel would hand to a shell)
# as one program, then prints every trained variable.
_TRAIN = """
import json, sys
import tensorflow as tf
tf.keras.utils.set_random_seed(0)
cells = json.load(open(sys.argv[1]))["cells"]
code = [
    "".join(c["source"]) for c in cells
    if c["cell_type"] == "code" and not "".join(c["source"]).lstrip().startswith("%")
]
exec(compile("\\n".join(code).replace("gs://my-bucket/model", sys.argv[2]), "nb", "exec"))
print(json.dumps({n: estimator.get_variable_value(n).tolist()
                  for n in estimator.get_variable_names()}))
"""


@pytest.mark.tf
def test_migrated_datalab_notebook_trains_identically_on_cpu(tmp_path: Path) -> None:
    """The notebook with a `%bash` cell between its model_fn and its Estimator: the migrated
    program (TPUEstimator, use_tpu=False on CPU) trains to the same variables, bit for bit."""
    h = harness()
    before = NOTEBOOKS / "datalab_bash_between_model_fn_and_estimator.before.ipynb"
    after = NOTEBOOKS / "datalab_bash_between_model_fn_and_estimator.after.ipynb"
    original = h.run_tf_json(_TRAIN, str(before), str(tmp_path / "original"))
    migrated = h.run_tf_json(_TRAIN, str(after), str(tmp_path / "migrated"))
    assert original.keys() == migrated.keys() and "dense/kernel" in original
    assert original["global_step"] == 10
    assert migrated == original
