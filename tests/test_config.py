"""`[tool.est2tpu]` in pyproject.toml: discovery, keys, --config, and CLI flags winning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from est2tpu.cli import app
from est2tpu.config import Config, ConfigError, find, load
from est2tpu.ftypes import Target

# TPU004 refuses on line 6 (optimize_loss with gradient noise is not expanded).
FINDING = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    train_op = tf.contrib.layers.optimize_loss(loss, None, 0.1, "SGD", gradient_noise_scale=0.5)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "src" / "trainer").mkdir(parents=True)
    (tmp_path / "src" / "trainer" / "task.py").write_text(FINDING, encoding="utf-8")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(FINDING, encoding="utf-8")
    return tmp_path


def pyproject(root: Path, table: str) -> Path:
    path = root / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n[tool.est2tpu]\n{table}\n", encoding="utf-8")
    return path


def check_json(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, ["check", "-f", "json", "-q", *args])
    return result.exit_code, json.loads(result.stdout) if result.stdout else {}


def paths(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return sorted(f["path"] for f in doc["files"])


def finding_rules(doc: dict) -> list[str]:  # type: ignore[type-arg]
    return sorted(f["rule"] for f in doc["findings"])


def test_found_by_walking_up_from_the_paths(project: Path) -> None:
    cfg = pyproject(project, 'target = "tf2"\nselect = ["TPU0"]')
    (project / "src" / "pyproject.toml").write_text("[project]\nname = 'no table'\n")
    assert find([project / "src" / "trainer" / "task.py"]) == cfg
    assert find([project / "src"]) == cfg
    config = load(cfg)
    assert config.target is Target.TF2 and config.select == ["TPU0"]


def test_nearest_table_wins(project: Path) -> None:
    pyproject(project, 'target = "tf2"')
    inner = pyproject(project / "src", 'target = "tpu-estimator"')
    assert find([project / "src" / "trainer"]) == inner


def test_ignore_and_exclude_from_config(project: Path) -> None:
    pyproject(project, 'ignore = ["TPU004"]\nextend-exclude = ["legacy/"]')
    code, doc = check_json(".")
    assert paths(doc) == ["src/trainer/task.py"]
    assert finding_rules(doc) == []
    assert code == 1  # still would change


def test_explicit_paths_are_excluded_too_for_pre_commit(project: Path) -> None:
    pyproject(project, 'exclude = ["legacy/*.py"]')
    _, doc = check_json("legacy/old.py", "src/trainer/task.py")
    assert paths(doc) == ["src/trainer/task.py"]


def test_cli_flags_win(project: Path) -> None:
    pyproject(project, 'ignore = ["TPU004"]\ntarget = "tf2"\nexclude = ["legacy"]')
    _, doc = check_json(
        "--ignore", "TPU009", "--target", "tpu-estimator", "--exclude", "nothing", "."
    )
    assert paths(doc) == ["legacy/old.py", "src/trainer/task.py"]
    assert finding_rules(doc) == ["TPU004", "TPU004"]


def test_target_from_config(project: Path) -> None:
    def diff(*args: str) -> str:
        return CliRunner().invoke(app, ["check", "--diff", "-q", *args, "src"]).stdout

    default = diff()
    tf2 = diff("--target", "tf2")
    assert default != tf2
    pyproject(project, 'target = "tf2"')
    assert diff() == tf2
    assert diff("--target", "tpu-estimator") == default


def test_per_file_ignores(project: Path) -> None:
    pyproject(
        project, '[tool.est2tpu.per-file-ignores]\n"legacy/*" = ["TPU004"]\n"task.py" = ["TPU0"]'
    )
    config = load(project / "pyproject.toml")
    assert config.ignores_for(project / "legacy" / "old.py") == ["TPU004"]
    assert config.ignores_for(project / "src" / "trainer" / "task.py") == ["TPU0"]
    _, doc = check_json(".")
    assert finding_rules(doc) == []
    task = next(f for f in doc["files"] if f["path"] == "src/trainer/task.py")
    assert task["status"] == "unchanged"  # every TPU0* rule is off for it


def test_runtime_false_means_no_runtime(project: Path) -> None:
    pyproject(project, "runtime = false")
    result = CliRunner().invoke(app, ["check", "--diff", "-q", "src"])
    assert "est2tpu.runtime" not in result.stdout
    result = CliRunner().invoke(app, ["check", "--diff", "-q", "--runtime", "src"])
    assert "est2tpu.runtime" in result.stdout


def test_explicit_config_file(project: Path) -> None:
    other = project / "ci.toml"
    other.write_text('[tool.est2tpu]\nignore = ["TPU004"]\n', encoding="utf-8")
    pyproject(project, "ignore = []")
    _, doc = check_json("--config", str(other), ".")
    assert finding_rules(doc) == []


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("colour = true", "unknown [tool.est2tpu] key(s): colour"),
        ('target = "tpu"', "target 'tpu' is not one of"),
        ("select = 3", "select must be a list of strings"),
        ('runtime = "no"', "runtime must be true or false"),
        ('ignore = ["XYZ999"]', "unknown rule ID(s): XYZ999"),
    ],
)
def test_bad_config_is_a_usage_error(project: Path, table: str, message: str) -> None:
    pyproject(project, table)
    result = CliRunner().invoke(app, ["check", "."])
    assert result.exit_code == 2
    assert message in result.stderr


def test_invalid_toml_names_the_file(project: Path) -> None:
    path = project / "broken.toml"
    path.write_text("[tool.est2tpu\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="broken.toml: not valid TOML"):
        load(path)
    result = CliRunner().invoke(app, ["check", "--config", str(path), "."])
    assert result.exit_code == 2


def test_no_config_is_the_defaults(project: Path) -> None:
    assert find([project]) is None or find([project]) != project / "pyproject.toml"
    assert Config().ignores_for(project / "x.py") == []
