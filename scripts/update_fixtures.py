"""Regenerate the fixtures' expected outputs from the tool as it is, and say what changed.

    .venv/bin/python scripts/update_fixtures.py [--against REV] [--layout-only] [-k EXPRESSION]

Runs tests/test_fixtures.py and the findings snapshots of tests/test_all_rules.py with
pytest-snapshot's `--snapshot-update`: every `fixtures/*/*.after.py` and `*.findings.txt`
and `tests/snapshots/all_rules/*.findings.txt` is written again from this checkout's
est2tpu (an expectation with no case left is not deleted); each notebook
`tests/notebooks/NAME.after.ipynb` is what `est2tpu migrate` makes of a copy of
`NAME.before.ipynb`. Then it runs the same tests and tests/test_notebook_magics.py without
the update (not the TensorFlow ones), which also compile each output and migrate it a second
time, and lists each expectation that differs from git's HEAD (or `--against` a revision): for an `.after.py`, whether only its
layout changed (the same Python code once the imports at its top are put in one order:
imports placed, lines wrapped) or its code did. Read every changed file before committing
(`git diff fixtures/ tests/snapshots/`).

`-k` selects cases as pytest does (`-k TPU004`). Exit status: 0 when the tests pass
after the update; 1 when they do not, or, with `--layout-only`, when an output's code
changed.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_fixtures.py", "tests/test_all_rules.py::test_all_rules_findings_snapshot"]
NOTEBOOKS = ROOT / "tests" / "notebooks"
WATCHED = ["fixtures", "tests/snapshots", "tests/notebooks"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _pytest(*args: str) -> int:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ROOT, env=_env(), check=False).returncode


def update_notebooks(keyword: str | None) -> None:
    """Each `NAME.after.ipynb`: `est2tpu migrate` of a copy of `NAME.before.ipynb`."""
    with tempfile.TemporaryDirectory() as scratch:
        for before in sorted(NOTEBOOKS.glob("*.before.ipynb")):
            name = before.name.removesuffix(".before.ipynb")
            if keyword and keyword not in name:
                continue
            copy = Path(scratch) / f"{name}.ipynb"
            shutil.copyfile(before, copy)
            command = [sys.executable, "-m", "est2tpu", "migrate", "--no-cache", "-q", str(copy)]
            done = subprocess.run(command, env=_env(), capture_output=True, text=True, check=False)
            if done.returncode not in (0, 1):
                sys.exit(f"update_fixtures: {before.name}: {done.stderr.strip()}")
            shutil.copyfile(copy, NOTEBOOKS / f"{name}.after.ipynb")


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, encoding="utf-8"
    )
    return done.stdout


def _code(text: str) -> list[str]:
    """The module's statements as Python reads them, the leading imports in one order."""
    body = ast.parse(text).body
    start = 1 if body and isinstance(body[0], ast.Expr) else 0
    end = start
    while end < len(body) and isinstance(body[end], (ast.Import, ast.ImportFrom)):
        end += 1
    head = sorted(ast.dump(node) for node in body[start:end])
    return [*(ast.dump(node) for node in body[:start]), *head] + [
        ast.dump(node) for node in body[end:]
    ]


def changes(against: str = "HEAD") -> list[tuple[str, str]]:
    """(path, what changed) for each expectation that differs from revision `against`."""
    out = []
    listed = _git("diff", "--name-status", "--no-renames", against, "--", *WATCHED)
    untracked = _git("ls-files", "--others", "--exclude-standard", "--", *WATCHED)
    rows = [line.split("\t", 1) for line in listed.splitlines()]
    rows += [["?", path] for path in untracked.splitlines()]
    for state, path in rows:
        if state in ("?", "A"):
            out.append((path, "new"))
        elif state == "D":
            out.append((path, "deleted"))
        elif path.endswith(".ipynb"):
            out.append((path, "notebook"))
        elif path.endswith(".after.py"):
            old = _git("show", f"{against}:{path}")
            new = (ROOT / path).read_text(encoding="utf-8")
            out.append((path, "layout only" if _code(old) == _code(new) else "code"))
        else:
            out.append((path, "findings"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="keyword", help="select cases, as pytest's -k")
    parser.add_argument("--against", default="HEAD", help="the revision to compare with")
    parser.add_argument(
        "--layout-only", action="store_true", help="exit 1 when an output's code changed"
    )
    args = parser.parse_args(argv)
    select = ["-k", args.keyword] if args.keyword else []
    _pytest(*TESTS, "--snapshot-update", *select)  # fails by design on each file it rewrote
    update_notebooks(args.keyword)
    checks = [*TESTS, "tests/test_notebook_magics.py", "-m", "not tf and not slow"]
    passed = _pytest(*checks, *select) == 0
    found = changes(args.against)
    for path, what in found:
        print(f"{what:>12}  {path}")
    code = [path for path, what in found if what == "code"]
    outputs = sum(1 for path, _ in found if path.endswith(".after.py"))
    print(
        f"{len(found)} expectations changed ({outputs} outputs, {len(code)} with a change of "
        f"code); the tests {'pass' if passed else 'FAIL'} after the update"
    )
    return 0 if passed and not (args.layout_only and code) else 1


if __name__ == "__main__":
    sys.exit(main())
