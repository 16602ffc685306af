"""A warm run over notebooks: answered by the results cache without loading LibCST, with the
findings, report and exit code of a cold run; a notebook that changed is parsed again.

Real subprocess runs of the CLI over real notebooks (`tests/notebooks/`), beside Python
modules, for both targets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import est2tpu

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "tests" / "notebooks"
PROJECT = REPO / "fixtures" / "projects" / "two_module_trainer"

# Runs the CLI and says on stderr whether LibCST was imported (as the last line).
DRIVER = (
    "import sys\n"
    "from est2tpu.cli import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    print('LIBCST', 'libcst' in sys.modules, file=sys.stderr)\n"
)


def check(root: Path, *args: str) -> tuple[int, str, str, bool]:
    """`est2tpu check -f json ARGS .` in `root`: exit code, stdout, stderr, LibCST loaded."""
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, "check", "-f", "json", *args, "."],
        cwd=root,
        env={**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(root.parent / "xdg")},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    *rest, last = done.stderr.rstrip("\n").split("\n")
    assert last.startswith("LIBCST "), done.stderr
    return done.returncode, done.stdout, "\n".join(rest), last == "LIBCST True"


def copy(names: list[str], root: Path, *, with_modules: bool) -> Path:
    root.mkdir()
    for name in names:
        shutil.copy(NOTEBOOKS / f"{name}.before.ipynb", root / f"{name}.ipynb")
    if with_modules:
        shutil.copytree(PROJECT, root / "trainer")
    return root


@pytest.mark.parametrize(
    ("names", "with_modules", "target"),
    [
        pytest.param(
            ["datalab_bash_between_model_fn_and_estimator"], False, "tpu-estimator", id="one"
        ),
        pytest.param(
            ["cell_magic_writefile_estimator_python", "crlf_cell_sources", "datalab_sh"],
            True,
            "tf2",
            id="three_beside_a_trainer_package_tf2",
        ),
    ],
)
def test_warm_notebook_check_loads_no_libcst_and_reports_as_cold(
    tmp_path: Path, names: list[str], with_modules: bool, target: str
) -> None:
    root = copy(names, tmp_path / "p", with_modules=with_modules)
    cold = check(root, "--target", target)
    warm = check(root, "--target", target)
    uncached = check(root, "--target", target, "--no-cache")
    assert cold[3] and uncached[3]  # these had to parse
    assert not warm[3], "a warm check of notebooks loaded LibCST"
    assert warm[:3] == cold[:3] == uncached[:3]
    report = json.loads(warm[1])
    assert {Path(f["path"]).suffix for f in report["files"]} >= {".ipynb"}
    assert warm[0] == 1  # every one of these has something to migrate


def _cells(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def here(root: Path, *args: str) -> tuple[int, str, str]:
    """`est2tpu check -f json ARGS ROOT` in this process (what it reports, not how a process
    starts): exit code, stdout, stderr."""
    done = est2tpu("check", "-f", "json", "--cache-dir", root.parent / "cache", *args, root)
    return done.returncode, done.stdout, done.stderr


def test_a_notebook_edited_after_the_cold_run_is_parsed_again(tmp_path: Path) -> None:
    """The cache knows the cells of the notebook's old bytes parse, not of its new ones."""
    root = copy(["datalab_bash_between_model_fn_and_estimator"], tmp_path / "p", with_modules=False)
    nb = root / "datalab_bash_between_model_fn_and_estimator.ipynb"
    assert here(root)[0] == 1
    data = _cells(nb)
    cells = data["cells"]
    assert isinstance(cells, list)
    # An unclosed bracket in cell 3: joined with the next cells, the program could still
    # parse; on its own the cell does not, and the notebook fails naming it.
    cells[2]["source"] = ["import numpy as np\n", "x = np.zeros((3,\n"]
    nb.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    warm = here(root)
    uncached = here(root, "--no-cache")
    assert warm == uncached
    assert warm[0] == 2
    assert "cannot parse cell 3" in warm[2]
    assert here(root) == uncached  # a notebook that fails is parsed on every run


def test_a_notebook_fixed_after_a_failing_run_is_migrated(tmp_path: Path) -> None:
    root = copy(["datalab_sh"], tmp_path / "p", with_modules=False)
    nb = root / "datalab_sh.ipynb"
    good = nb.read_bytes()
    data = _cells(nb)
    cells = data["cells"]
    assert isinstance(cells, list)
    code = next(c for c in cells if c["cell_type"] == "code")
    code["source"] = ["def f(:\n"]
    nb.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    assert check(root)[0] == 2
    nb.write_bytes(good)
    fixed = check(root)
    assert fixed[0] == 1
    assert fixed[3]  # parsed: the failing bytes' run remembered nothing for these
    warm = check(root)
    assert not warm[3] and warm[:3] == fixed[:3]
    assert here(root, "--no-cache")[0] == fixed[0]


def test_a_warm_notebook_check_under_other_settings_misses(tmp_path: Path) -> None:
    """Another target, another rule selection or a config file: the cache answers none of
    them from the first run's results (each changes the report, so a hit would show)."""
    root = copy(["datalab_bash_between_model_fn_and_estimator"], tmp_path / "p", with_modules=False)
    first = here(root)
    for args in (["--target", "tf2"], ["--ignore", "TPU007"]):
        other = here(root, *args)
        assert other[1] != first[1], args
        assert other == here(root, *args, "--no-cache")
    (root / "pyproject.toml").write_text('[tool.est2tpu]\nignore = ["TPU005"]\n', encoding="utf-8")
    configured = here(root)
    assert configured[1] != first[1]  # the config changed what is reported
    assert configured == here(root, "--no-cache")
