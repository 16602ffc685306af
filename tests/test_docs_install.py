"""The README's Install section and the extras it names: each extra pins what its target's
migrated code needs, and the TensorFlow environments the tests train in satisfy those pins."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # est2tpu depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
EXTRAS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "optional-dependencies"
]
# tensorflow-cpu is the tensorflow module too; the extras name the `tensorflow` distribution.
SAME_MODULE = {"tensorflow-cpu": "tensorflow"}


def _install_section() -> str:
    match = re.search(r"^## Install\n(.*?)^## ", README, re.MULTILINE | re.DOTALL)
    assert match, "README has no '## Install' section"
    return match.group(1)


def _requirements(extra: str) -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in map(Requirement, EXTRAS[extra])}


def test_install_section_says_how_to_get_the_tool_and_each_targets_runtime() -> None:
    section = _install_section()
    assert "pip install ./est2tpu\n" in section  # the tool alone, from a checkout
    assert 'pip install "est2tpu[tpu-estimator]"' in section
    assert 'pip install "est2tpu[tf2]"' in section
    assert "3.11" in section and "est2tpu.runtime" in section
    assert ".venv/bin/est2tpu" in section  # what `make demo` leaves, off PATH
    # It comes before the first use of the CLI.
    assert README.index("## Install") < README.index("## Usage")


def test_tpu_estimator_extra_pins_tensorflow_215_and_its_estimator() -> None:
    reqs = _requirements("tpu-estimator")
    assert set(reqs) == {"tensorflow", "tensorflow-estimator"}
    for req in reqs.values():
        assert "2.15.1" in req.specifier or "2.15.0" in req.specifier
        assert "2.16.0" not in req.specifier and "2.14.0" not in req.specifier


def test_tf2_extra_pins_current_tensorflow_and_tf_keras() -> None:
    reqs = _requirements("tf2")
    assert {"tensorflow", "tf-keras", "tensorboard"} <= set(reqs)
    assert "2.15.1" not in reqs["tensorflow"].specifier
    assert "2.16.0" in reqs["tensorflow"].specifier


@pytest.mark.parametrize(
    ("env", "extra", "names"),
    [
        ("EST2TPU_TF215_PYTHON", "tpu-estimator", ["tensorflow-cpu", "tensorflow-estimator"]),
        ("EST2TPU_TFCUR_PYTHON", "tf2", ["tensorflow-cpu", "tf-keras", "tensorboard"]),
    ],
    ids=["tpu-estimator", "tf2"],
)
def test_the_environments_the_tests_train_in_satisfy_the_extras(
    env: str, extra: str, names: list[str]
) -> None:
    python = os.environ.get(env)
    if not python:
        if os.environ.get("EST2TPU_REQUIRE_TF") == "1" and env == "EST2TPU_TF215_PYTHON":
            pytest.fail(f"{env} is not set", pytrace=False)
        pytest.skip(f"{env} is not set")
    code = "import importlib.metadata as m, sys; print(*(m.version(n) for n in sys.argv[1:]))"
    done = subprocess.run(
        [python, "-c", code, *names], capture_output=True, text=True, check=True, timeout=60
    )
    reqs = _requirements(extra)
    for name, version in zip(names, done.stdout.split(), strict=True):
        req = reqs[SAME_MODULE.get(name, name)]
        assert version in req.specifier, f"{name} {version} is outside {req} ({extra})"
