"""Fixtures for the tf2 target's tests: current TensorFlow in a separate interpreter.

TF code runs in subprocesses with ``EST2TPU_TFCUR_PYTHON`` (``.venv-tfcur/bin/python``, built
by ``scripts/tfcur-env.sh``). Without it these tests skip, unless ``EST2TPU_REQUIRE_TF=1``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

TFCUR_PYTHON_ENV = "EST2TPU_TFCUR_PYTHON"


def load_harness() -> ModuleType:
    """Import ``tests/e2e/harness.py`` by path (the same module object tests/e2e uses)."""
    name = "est2tpu_e2e_harness"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "e2e" / "harness.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def tfcur_python() -> str:
    """The current-TensorFlow interpreter, or skip (fail under EST2TPU_REQUIRE_TF=1)."""
    python = os.environ.get(TFCUR_PYTHON_ENV, "")
    if python and Path(python).is_file():
        return python
    reason = (
        f"{TFCUR_PYTHON_ENV} is not set; run scripts/tfcur-env.sh and set it to "
        ".venv-tfcur/bin/python to run the tf2 tests"
        if not python
        else f"{TFCUR_PYTHON_ENV} names a missing interpreter: {python}"
    )
    if os.environ.get("EST2TPU_REQUIRE_TF") == "1":
        pytest.fail(f"EST2TPU_REQUIRE_TF=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def harness() -> ModuleType:
    return load_harness()


@pytest.fixture(scope="session")
def tfcur() -> str:
    return tfcur_python()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`), one worker takes a project's tests of
    test_tf2_e2e.py, so that the unmigrated project trains once (its `original` is per
    worker process) for all the strategies it is compared under: the worker that takes the
    project's tests of tests/e2e (group `e2e-<name>`), which compare with the same run."""
    for item in items:
        if item.path.name != "test_tf2_e2e.py" or Path(__file__).parent != item.path.parent:
            continue
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("name") if callspec is not None else None
        if name is not None:
            item.add_marker(pytest.mark.xdist_group(f"e2e-{name}"))
