"""`check --output-format json|github|sarif|junit`: each report parsed back and checked."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sarif_schema import validate as validate_sarif
from typer.testing import CliRunner

from est2tpu import api
from est2tpu.cli import app

CHANGES = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""

# TPU004 refuses on line 6, column 16.
FINDING = CHANGES.replace(
    "    return tf.estimator",
    "    train_op = tf.contrib.layers.optimize_loss(loss, None, 0.1, 'SGD', gradient_noise_scale=0.5)\n    return tf.estimator",
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "changes.py").write_text(CHANGES, encoding="utf-8")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "finding.py").write_text(FINDING, encoding="utf-8")
    (tmp_path / "clean.py").write_text("import tensorflow as tf\n", encoding="utf-8")
    # A file a rule would act on (it imports TensorFlow and names the Estimator) that does
    # not parse: reported as failed.
    (tmp_path / "broken.py").write_text(
        "import tensorflow as tf\n\ntf.estimator.Estimator(\n", encoding="utf-8"
    )
    return tmp_path


def check(fmt: str, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["check", "--output-format", fmt, *extra, "."])
    if fmt == "sarif" and result.stdout:
        validate_sarif(result.stdout)  # every SARIF document these tests see
    return result.exit_code, result.stdout, result.stderr


def test_json(project: Path) -> None:
    code, out, err = check("json")
    assert code == 2  # broken.py failed
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["tool"]["name"] == "est2tpu"
    files = {f["path"]: f for f in doc["files"]}
    assert set(files) == {"a/changes.py", "b/finding.py", "broken.py", "clean.py"}
    assert files["a/changes.py"]["status"] == "changed" and files["a/changes.py"]["changed"]
    rules = {e["rule"] for e in files["a/changes.py"]["edits"]}
    assert {"TPU006", "TPU007"} <= rules
    assert all(
        isinstance(e["line"], int) and isinstance(e["column"], int)
        for e in files["a/changes.py"]["edits"]
    )
    assert files["broken.py"]["status"] == "failed"
    assert files["broken.py"]["error"].startswith("cannot parse")
    assert files["clean.py"]["status"] in {"skipped", "unchanged"}
    assert "diff" not in files["a/changes.py"]
    [finding] = doc["findings"]
    assert finding == {
        "path": "b/finding.py",
        "cell": None,
        "line": 6,
        "column": 16,
        "rule": "TPU004",
        "message": finding["message"],
        "fixable": False,
    }
    assert doc["summary"]["failed"] == 1 and doc["summary"]["findings"] == {"TPU004": 1}
    # The report is on stdout alone; people's diagnostics are on stderr.
    assert "broken.py: error:" in err


def test_json_with_diff(project: Path) -> None:
    _, out, _ = check("json", "--diff")
    files = {f["path"]: f for f in json.loads(out)["files"]}
    assert files["a/changes.py"]["diff"].startswith("--- a/a/changes.py\n+++ b/a/changes.py\n")
    assert files["clean.py"]["diff"] == ""


GH_LINE = re.compile(
    r"^::(?P<level>warning|error) file=(?P<file>[^,:]+)(?:,line=(?P<line>\d+),col=(?P<col>\d+))?"
    r",title=(?P<title>[^:]+)::(?P<message>.+)$"
)


def test_github(project: Path) -> None:
    code, out, _ = check("github")
    assert code == 2
    lines = out.splitlines()
    parsed = [GH_LINE.match(line) for line in lines]
    assert all(parsed), lines
    by_file: dict[str, list[re.Match[str]]] = {}
    for m in parsed:
        assert m is not None
        by_file.setdefault(m["file"], []).append(m)
    [error] = by_file["broken.py"]
    assert error["level"] == "error" and error["message"].startswith("cannot parse")
    [tpu004] = [m for m in by_file["b/finding.py"] if m["title"] == "TPU004"]
    assert (tpu004["level"], tpu004["line"], tpu004["col"]) == ("warning", "6", "16")
    assert {m["title"] for m in by_file["a/changes.py"]} >= {"TPU006", "TPU007"}
    assert all(m["message"].startswith("would rewrite: ") for m in by_file["a/changes.py"])
    assert "clean.py" not in by_file


def test_github_escapes_properties_and_newlines() -> None:
    from est2tpu import report
    from est2tpu.ftypes import FileResult, Finding, Position, Status

    result = FileResult(
        Path("a,b:c.py"),
        Status.UNCHANGED,
        findings=[Finding("TPU009", "50% done\nnext", Position(1, 1), path="a,b:c.py")],
    )
    assert report.github_report([result]) == (
        "::warning file=a%2Cb%3Ac.py,line=1,col=1,title=TPU009::50%25 done%0Anext\n"
    )


def test_sarif(project: Path) -> None:
    code, out, _ = check("sarif")
    assert code == 2
    doc = json.loads(out)
    assert doc["version"] == "2.1.0" and "sarif" in doc["$schema"]
    [run] = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "est2tpu"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert rule_ids == [r.id for r in api.all_rules()]
    for rule in driver["rules"]:
        info = api.get_rule(rule["id"])
        assert rule["name"] == info.name
        assert rule["shortDescription"]["text"] == info.summary
        assert rule["fullDescription"]["text"] == info.sections["What it does"].strip()
        assert "## Why" in rule["help"]["markdown"]
    assert run["results"]
    for res in run["results"]:
        assert res["ruleId"] in rule_ids
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] == "warning" and res["message"]["text"]
        [loc] = res["locations"]
        region = loc["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert loc["physicalLocation"]["artifactLocation"]["uri"] in {
            "a/changes.py",
            "b/finding.py",
        }
    [tpu004] = [r for r in run["results"] if r["ruleId"] == "TPU004"]
    assert tpu004["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 6,
        "startColumn": 16,
    }
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"


def test_junit(project: Path) -> None:
    code, out, _ = check("junit")
    assert code == 2
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    [suite] = root
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"a/changes.py", "b/finding.py", "broken.py", "clean.py"}
    assert suite.get("tests") == "4" and suite.get("errors") == "1"
    assert suite.get("failures") == "2"
    assert cases["broken.py"].find("error") is not None
    failure = cases["b/finding.py"].find("failure")
    assert failure is not None and "TPU004: 6:16:" in (failure.text or "")
    changed = cases["a/changes.py"].find("failure")
    assert changed is not None and "would be rewritten" in (changed.get("message") or "")
    assert cases["clean.py"].find("failure") is None


def test_clean_project_reports_are_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    assert check("github") == (0, "", check("github")[2])
    code, out, _ = check("sarif")
    assert code == 0 and json.loads(out)["runs"][0]["results"] == []
    code, out, _ = check("json")
    assert code == 0 and json.loads(out)["findings"] == []


def test_notebook_findings_name_the_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": FINDING.splitlines(keepends=True),
        },
    ]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    code, out, _ = check("json")
    assert code == 1
    [finding] = json.loads(out)["findings"]
    assert (finding["path"], finding["cell"], finding["line"]) == ("nb.ipynb", 2, 6)
    _, out, err = check("text")
    assert "nb.ipynb:cell 2:6:16: TPU004" in err
    _, out, _ = check("sarif")
    [res] = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "TPU004"]
    assert res["properties"] == {"cell": 2} and res["message"]["text"].startswith("cell 2: ")


def test_diff_with_a_machine_format_is_a_usage_error(project: Path) -> None:
    code, out, err = check("sarif", "--diff")
    assert code == 2 and out == "" and "--diff" in err
