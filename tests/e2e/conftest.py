"""Fixtures for the end-to-end tests that train projects under TensorFlow 2.15."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def load_harness() -> ModuleType:
    """Import ``harness.py`` by path, whatever pytest's import mode puts on sys.path."""
    name = "est2tpu_e2e_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("harness.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def harness() -> ModuleType:
    """The harness module (run_project, copy_project, PROJECTS, ...)."""
    return load_harness()


@pytest.fixture(scope="session")
def tf_python(harness: ModuleType) -> str:
    """The TF 2.15 interpreter; skips (or fails under EST2TPU_REQUIRE_TF=1) without it."""
    return str(harness.tf_python())


@pytest.fixture(scope="session")
def original_run(
    harness: ModuleType, tf_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], object]:
    """``original_run(name)``: the result of running the unmigrated project, once per worker
    (shared with tests/tf2: ``harness.original_run``)."""

    def run(name: str) -> object:
        return harness.original_run(name, tmp_path_factory)

    return run


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``project_name`` over every end-to-end project, ``tpu_project_name`` over
    those the tpu-estimator target migrates, ``tf2_only_project_name`` over the others."""
    projects = load_harness().PROJECTS
    if "project_name" in metafunc.fixturenames:
        metafunc.parametrize("project_name", sorted(projects))
    if "tpu_project_name" in metafunc.fixturenames:
        names = sorted(name for name, p in projects.items() if not p.tf2_only)
        metafunc.parametrize("tpu_project_name", names)
    if "tf2_only_project_name" in metafunc.fixturenames:
        names = sorted(name for name, p in projects.items() if p.tf2_only)
        metafunc.parametrize("tf2_only_project_name", names)


# `make check` migrates these two (one module; a package of several) without TensorFlow;
# the full suite every project.
CHECK_PROJECTS = {"single_file_classifier", "two_module_trainer"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`), one worker takes all of a project's tests,
    so that the unmigrated project trains once (`original_run` is per worker process).
    A project's migration without TensorFlow (about 1.5 s each) is `slow` outside
    CHECK_PROJECTS."""
    here = Path(__file__).parent
    for item in items:
        if here not in item.path.parents:
            continue
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        name = (
            params.get("project_name")
            or params.get("tpu_project_name")
            or params.get("tf2_only_project_name")
        )
        if name is not None:
            item.add_marker(pytest.mark.xdist_group(f"e2e-{name}"))
            slow = "migrated" in getattr(item, "fixturenames", ())
            if slow and name not in CHECK_PROJECTS and item.get_closest_marker("tf") is None:
                item.add_marker(pytest.mark.slow)
