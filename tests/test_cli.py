"""The command line: exit codes, stdin, writes (and the lack of them), rules and explain."""

from __future__ import annotations

import codecs
import io
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from est2tpu import api, report
from est2tpu.cli import app
from est2tpu.ftypes import FileResult, Finding, Position, Status
from est2tpu.writer import Written

# Migrates with no finding left: Estimator + EstimatorSpec, nothing else.
CLEAN_MIGRATION = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""

# Migrates, but leaves a finding: optimize_loss with gradient noise cannot be expanded (TPU004).
WITH_FINDING = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    # TPU004 expands optimize_loss as TF 1.15 does, but refuses gradient noise.
    train_op = tf.contrib.layers.optimize_loss(
        loss, None, learning_rate=0.1, optimizer="SGD", gradient_noise_scale=0.5
    )
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""

NOTHING_TO_DO = "import numpy as np\n\nx = np.zeros(3)\n"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def snapshot_files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file under root: proof that nothing was written."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- check -----------------------------------------------------------------------------


def test_check_clean_file_exits_0(runner: CliRunner, project: Path) -> None:
    write(project / "clean.py", NOTHING_TO_DO)
    before = snapshot_files(project)
    result = runner.invoke(app, ["check", "clean.py"])
    assert result.exit_code == 0, result.output
    assert snapshot_files(project) == before


def test_check_estimator_code_exits_1_and_writes_nothing(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", CLEAN_MIGRATION)
    write(project / "pkg" / "other.py", WITH_FINDING)
    before = snapshot_files(project)
    result = runner.invoke(app, ["check", "."])
    assert result.exit_code == 1, result.output
    assert snapshot_files(project) == before
    assert "would migrate train.py" in result.stderr
    assert result.stdout == ""


def test_check_missing_path_exits_2(runner: CliRunner, project: Path) -> None:
    result = runner.invoke(app, ["check", "does_not_exist.py"])
    assert result.exit_code == 2
    assert "does_not_exist.py: error: no such file or directory" in result.stderr


def test_check_unparsable_file_exits_2_and_keeps_it(runner: CliRunner, project: Path) -> None:
    write(project / "broken.py", "import tensorflow as tf\nest = tf.estimator.Estimator(\n")
    write(project / "ok.py", NOTHING_TO_DO)
    before = snapshot_files(project)
    result = runner.invoke(app, ["check", "."])
    assert result.exit_code == 2
    assert "broken.py: error:" in result.stderr
    assert snapshot_files(project) == before


def test_check_diff_prints_diff_and_writes_nothing(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", CLEAN_MIGRATION)
    before = snapshot_files(project)
    result = runner.invoke(app, ["check", "--diff", "train.py"])
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert snapshot_files(project) == before


# --- migrate ---------------------------------------------------------------------------


def test_migrate_rewrites_in_place_and_exits_0(runner: CliRunner, project: Path) -> None:
    f = write(project / "train.py", CLEAN_MIGRATION)
    result = runner.invoke(app, ["migrate", "train.py"])
    assert result.exit_code == 0, result.output
    text = f.read_text()
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in text
    assert "TPUEstimatorSpec(" in text
    assert "migrated train.py" in result.stderr
    assert result.stdout == ""
    # A second run has nothing left to do.
    again = runner.invoke(app, ["check", "train.py"])
    assert again.exit_code == 0, again.output


def test_migrate_with_findings_exits_1(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", WITH_FINDING)
    result = runner.invoke(app, ["migrate", "train.py"])
    assert result.exit_code == 1, result.output
    finding_lines = [line for line in result.stderr.splitlines() if line.startswith("train.py:")]
    assert finding_lines, result.stderr
    _path, line, col, rest = finding_lines[0].split(":", 3)
    assert line.isdigit() and col.isdigit()
    assert rest.split()[0].isalnum()  # the rule ID


def test_migrate_failed_file_exits_2_and_the_run_continues(
    runner: CliRunner, project: Path
) -> None:
    bad = project / "a_latin1.py"
    latin1 = b"import tensorflow as tf\nest = tf.estimator.Estimator\nname = '\xe9'\n"
    bad.write_bytes(latin1)
    good = write(project / "b_train.py", CLEAN_MIGRATION)
    result = runner.invoke(app, ["migrate", "."])
    assert result.exit_code == 2
    assert "a_latin1.py: error: cannot decode" in result.stderr
    assert bad.read_bytes() == latin1
    assert "TPUEstimator(" in good.read_text()


def test_migrate_diff_writes_nothing(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", CLEAN_MIGRATION)
    before = snapshot_files(project)
    result = runner.invoke(app, ["migrate", "--diff", "train.py"])
    assert result.exit_code == 1, result.output  # --diff is a check: changes pending
    assert snapshot_files(project) == before
    assert result.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@")
    assert "+est = tf.compat.v1.estimator.tpu.TPUEstimator(" in result.stdout


def test_migrate_keeps_crlf_bom_and_mode(runner: CliRunner, project: Path) -> None:
    f = project / "train.py"
    f.write_bytes(codecs.BOM_UTF8 + CLEAN_MIGRATION.replace("\n", "\r\n").encode())
    f.chmod(0o750)
    result = runner.invoke(app, ["migrate", "train.py"])
    assert result.exit_code == 0, result.output
    data = f.read_bytes()
    assert data.startswith(codecs.BOM_UTF8)
    assert b"TPUEstimator(" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    assert stat.S_IMODE(f.stat().st_mode) == 0o750


def test_migrate_keeps_latin1_coding_cookie(runner: CliRunner, project: Path) -> None:
    f = project / "train.py"
    source = "# -*- coding: latin-1 -*-\n# Modèle\n" + CLEAN_MIGRATION
    f.write_bytes(source.encode("latin-1"))
    result = runner.invoke(app, ["migrate", "train.py"])
    assert result.exit_code == 0, result.output
    data = f.read_bytes()
    assert b"# Mod\xe8le\n" in data
    assert b"TPUEstimator(" in data


def test_migrate_write_failure_is_reported_and_run_continues(
    runner: CliRunner, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(project / "a.py", CLEAN_MIGRATION)
    second = write(project / "b.py", CLEAN_MIGRATION)
    from est2tpu import cli

    real = cli.write_file

    def flaky(path: Path, data: bytes, **checks: Any) -> Written:
        if path.name == "a.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, data, **checks)

    monkeypatch.setattr(cli, "write_file", flaky)
    result = runner.invoke(app, ["migrate", "."])
    assert result.exit_code == 2
    assert "a.py: error: cannot write: Permission denied" in result.stderr
    assert first.read_text() == CLEAN_MIGRATION
    assert "TPUEstimator(" in second.read_text()


def test_migrate_unchanged_file_is_not_touched(runner: CliRunner, project: Path) -> None:
    write(project / "clean.py", NOTHING_TO_DO)
    write(project / "mentions_estimator.py", "# no tf.estimator here, just words\nx = 1\n")
    before = snapshot_files(project)
    result = runner.invoke(app, ["migrate", "."])
    assert result.exit_code == 0, result.output
    assert snapshot_files(project) == before


# --- stdin -----------------------------------------------------------------------------


def test_migrate_stdin_prints_migrated_code(runner: CliRunner, project: Path) -> None:
    result = runner.invoke(app, ["migrate", "-"], input=CLEAN_MIGRATION)
    assert result.exit_code == 0, result.output
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in result.stdout
    assert result.stdout.startswith(
        "import est2tpu.runtime as tpu_runtime\nimport tensorflow as tf\n"
    )
    assert list(project.iterdir()) == []


def test_migrate_stdin_findings_go_to_stderr(runner: CliRunner, project: Path) -> None:
    result = runner.invoke(app, ["migrate", "-q", "-"], input=WITH_FINDING)
    assert result.exit_code == 1
    assert any(line.startswith("-:") for line in result.stderr.splitlines())
    assert not any(line.startswith("-:") for line in result.stdout.splitlines())


def test_migrate_stdin_undecodable_passes_input_through_and_exits_2(
    runner: CliRunner, project: Path
) -> None:
    data = b"x = '\xff'\n"
    result = runner.invoke(app, ["migrate", "-"], input=data)
    assert result.exit_code == 2
    assert result.stdout_bytes == data
    assert "-: error: cannot decode" in result.stderr


def test_migrate_stdin_diff(runner: CliRunner, project: Path) -> None:
    result = runner.invoke(app, ["migrate", "--diff", "-"], input=CLEAN_MIGRATION)
    assert result.exit_code == 1  # --diff is a check: changes pending
    assert result.stdout.startswith("--- a/-\n+++ b/-\n")


def test_check_stdin(runner: CliRunner, project: Path) -> None:
    assert runner.invoke(app, ["check", "-"], input=NOTHING_TO_DO).exit_code == 0
    result = runner.invoke(app, ["check", "-"], input=CLEAN_MIGRATION)
    assert result.exit_code == 1
    assert result.stdout == ""


# --- usage errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["migrate"], id="no_paths"),
        pytest.param(["check", "--target", "tpu-v9", "x.py"], id="bad_target"),
        pytest.param(["check", "--select", "NOPE999", "x.py"], id="unknown_select"),
        pytest.param(["migrate", "--ignore", "ZZZ", "x.py"], id="unknown_ignore"),
        pytest.param(["frobnicate"], id="unknown_command"),
        pytest.param(["check", "-", "-"], id="stdin_twice"),
    ],
)
def test_usage_errors_exit_2(runner: CliRunner, project: Path, args: list[str]) -> None:
    write(project / "x.py", NOTHING_TO_DO)
    before = snapshot_files(project)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert snapshot_files(project) == before


def test_select_and_ignore_accept_known_ids(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", CLEAN_MIGRATION)
    # Every ID but one: ignoring them all would leave no rule, a usage error.
    ids = [r.id for r in api.all_rules() if r.id != "TPU001"]
    result = runner.invoke(app, ["check", "--ignore", ",".join(ids), "train.py"])
    assert result.exit_code == 0, result.output


def test_exclude_skips_files(runner: CliRunner, project: Path) -> None:
    write(project / "legacy" / "train.py", CLEAN_MIGRATION)
    write(project / "clean.py", NOTHING_TO_DO)
    result = runner.invoke(app, ["check", "--exclude", "legacy/", "."])
    assert result.exit_code == 0, result.output


def test_no_colour_codes_when_not_a_tty(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", WITH_FINDING)
    result = runner.invoke(app, ["check", "--diff", "train.py"])
    assert "\x1b[" not in result.stdout
    assert "\x1b[" not in result.stderr


def test_diff_is_coloured_only_on_a_terminal_without_no_color(
    runner: CliRunner, project: Path
) -> None:
    write(project / "train.py", CLEAN_MIGRATION)
    # FORCE_COLOR makes rich treat the stream as a terminal.
    tty = runner.invoke(
        app, ["check", "--diff", "train.py"], env={"FORCE_COLOR": "1", "NO_COLOR": None}
    )
    assert "\x1b[" in tty.stdout
    assert "\x1b[" not in runner.invoke(app, ["check", "--diff", "train.py"]).stdout
    plain = runner.invoke(
        app, ["check", "--diff", "train.py"], env={"FORCE_COLOR": "1", "NO_COLOR": "1"}
    )
    assert "\x1b[" not in plain.stdout
    assert plain.stdout.startswith("--- a/train.py\n")


def test_progress_bar_moves_through_every_stage(project: Path) -> None:
    from est2tpu.cli import PROGRESS_MIN_FILES
    from est2tpu.streams import ProgressBar

    paths = [write(project / f"m{i:02}.py", NOTHING_TO_DO) for i in range(PROGRESS_MIN_FILES + 5)]
    paths.append(write(project / "train.py", CLEAN_MIGRATION))
    stream = io.StringIO()
    bar = ProgressBar(Console(file=stream, force_terminal=True, width=100))
    seen: list[tuple[str, int, int]] = []

    def show(stage: str, done: int, total: int) -> None:
        seen.append((stage, done, total))
        bar.show(stage, done, total)

    results = list(bar.done_on_first(api.migrate_paths([project], progress=show, jobs=1)))
    assert sorted(r.path for r in results) == sorted(paths)
    stages = [stage for stage, _, _ in seen]
    assert stages.index("scanning") < stages.index("indexing") < stages.index("rewriting")
    assert ("scanning", len(paths), len(paths)) in seen
    assert seen[-1][0] == "rewriting" and seen[-1][1] == seen[-1][2] > 0
    for stage in ("scanning", "indexing", "rewriting"):
        assert stage in stream.getvalue()


def test_no_progress_bar_for_a_short_run(project: Path) -> None:
    from est2tpu.streams import ProgressBar

    write(project / "train.py", CLEAN_MIGRATION)
    stream = io.StringIO()
    bar = ProgressBar(Console(file=stream, force_terminal=True, width=100))
    assert len(list(bar.done_on_first(api.migrate_paths([project], progress=bar.show)))) == 1
    assert stream.getvalue() == ""


def test_quiet_omits_summary(runner: CliRunner, project: Path) -> None:
    write(project / "train.py", CLEAN_MIGRATION)
    loud = runner.invoke(app, ["check", "train.py"])
    quiet = runner.invoke(app, ["check", "--quiet", "train.py"])
    assert "files scanned" in loud.stderr
    assert "files scanned" not in quiet.stderr
    assert quiet.exit_code == loud.exit_code == 1


# --- rules and explain -----------------------------------------------------------------


def test_rules_lists_every_rule(runner: CliRunner) -> None:
    rules = api.all_rules()
    assert rules, "the catalogue is empty"
    result = runner.invoke(app, ["rules"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for rule in rules:
        assert rule.id in result.stdout


def test_rules_reads_well_in_80_columns(runner: CliRunner) -> None:
    rules = api.all_rules()
    result = runner.invoke(app, ["rules"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    # Five lines a rule at most (the five-column layout gave one summary word per line).
    assert len(lines) <= 5 + 5 * len(rules), result.stdout
    flat = " ".join(line.strip("│ ") for line in lines)
    for rule in rules:
        assert f"{rule.id} │ {rule.name} · {rule.safety.value}" in result.stdout
        assert rule.summary.split()[0] in flat


def test_version(runner: CliRunner) -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    version = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"est2tpu {version}\n"


def test_explain_prints_what_it_does(runner: CliRunner) -> None:
    rule = api.all_rules()[0]
    result = runner.invoke(app, ["explain", rule.id])
    assert result.exit_code == 0
    assert "What it does" in result.stdout
    assert rule.sections["What it does"].strip().splitlines()[0] in result.stdout


def test_explain_is_case_insensitive(runner: CliRunner) -> None:
    rule = api.all_rules()[0]
    assert runner.invoke(app, ["explain", rule.id.lower()]).exit_code == 0


def test_explain_unknown_id_exits_2(runner: CliRunner) -> None:
    result = runner.invoke(app, ["explain", "XYZ999"])
    assert result.exit_code == 2
    assert "unknown rule ID 'XYZ999'" in result.stderr
    assert result.stdout == ""


# --- entry points ----------------------------------------------------------------------


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "est2tpu", "check", str(tmp_path / "missing.py")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode == 2
    assert "missing.py: error: no such file or directory" in proc.stderr


# --- report rendering ------------------------------------------------------------------


def render(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def test_diff_marks_missing_final_newline() -> None:
    result = FileResult(Path("a.py"), Status.CHANGED, old_text="x = 1", new_text="x = 2")
    assert report.unified_diff(result) == (
        "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n"
        "-x = 1\n\\ No newline at end of file\n"
        "+x = 2\n\\ No newline at end of file\n"
    )


def test_diff_of_unchanged_result_is_empty() -> None:
    assert report.unified_diff(FileResult(Path("a.py"), Status.UNCHANGED, "x\n", "x\n")) == ""


def test_finding_and_failure_lines() -> None:
    result = FileResult(
        Path("src/a.py"),
        Status.CHANGED,
        findings=[
            Finding("TPU002", "second", Position(9, 1)),
            Finding("TPU001", "first", Position(3, 5)),
        ],
    )
    assert report.finding_lines(result) == [
        "src/a.py:3:5: TPU001 first",
        "src/a.py:9:1: TPU002 second",
    ]
    failed = FileResult(Path("b.py"), Status.FAILED, error="cannot parse:\n  line 3")
    assert report.failure_line(failed) == "b.py: error: cannot parse: line 3"


def test_summary_table_counts() -> None:
    results = [
        FileResult(Path("a.py"), Status.CHANGED, findings=[Finding("TPU004", "m", Position(1, 1))]),
        FileResult(Path("b.py"), Status.SKIPPED),
        FileResult(Path("c.py"), Status.UNCHANGED),
        FileResult(Path("d.py"), Status.FAILED, error="x"),
    ]
    text = render(report.summary_table(report.Summary.of(results), dry_run=True))
    for label, count in [
        ("files scanned", 4),
        ("skipped", 1),
        ("would change", 1),
        ("unchanged", 1),
        ("failed", 1),
        ("findings TPU004", 1),
    ]:
        row = next(line for line in text.splitlines() if label in line)
        assert row.split("│")[-2].strip() == str(count), row


def test_explain_ends_with_the_fixture_example(runner: CliRunner) -> None:
    result = runner.invoke(app, ["explain", "TPU002"])
    assert result.exit_code == 0
    assert "## Example" in result.stdout
    assert "```diff\n--- a/export_savedmodel.py" in result.stdout
    assert "+    return estimator.export_saved_model(" in result.stdout


def test_verbose_names_every_file_and_the_config(runner: CliRunner, project: Path) -> None:
    write(project / "pyproject.toml", "[tool.est2tpu]\n")
    write(project / "clean.py", NOTHING_TO_DO)
    write(project / "train.py", CLEAN_MIGRATION)
    result = runner.invoke(app, ["check", "-v", "."])
    assert "config: " in result.stderr and "pyproject.toml" in result.stderr
    assert "skipped clean.py" in result.stderr
    assert "would migrate train.py" in result.stderr


def test_package_level_api_is_lazy() -> None:
    code = (
        "import sys, est2tpu; assert 'libcst' not in sys.modules; "
        "r = est2tpu.migrate_source('x = 1\\n', target=est2tpu.Target.TPU_ESTIMATOR); "
        "print(r.status.value)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "unchanged"
