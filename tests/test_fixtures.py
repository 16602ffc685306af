"""Every rule's fixtures, checked four ways: output snapshot, findings snapshot, compile(),
and a second run that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.ftypes import Status, Target
from est2tpu.registry import rule_classes

FIXTURES = data_dir("fixtures")
CASES = sorted(p for p in FIXTURES.glob("*/*.before.py") if p.parent.name != "projects")


def _target(rule_id: str) -> Target:
    """The target a rule's fixtures run under: its own when it has only one."""
    for cls in rule_classes():
        if cls.ID == rule_id and len(cls.TARGETS) == 1:
            return cls.TARGETS[0]
    return Target.TPU_ESTIMATOR


def _render_findings(findings: list) -> str:  # type: ignore[type-arg]
    return "".join(f.render() + "\n" for f in findings)


@pytest.mark.parametrize("before", CASES, ids=[f"{p.parent.name}/{p.name[:-10]}" for p in CASES])
def test_fixture(before: Path, snapshot) -> None:  # type: ignore[no-untyped-def]
    rule_id = before.parent.name
    case = before.name[: -len(".before.py")]
    text = before.read_text(encoding="utf-8")
    target = _target(rule_id)
    result = migrate_source(text, path=f"{case}.py", select=[rule_id], target=target)
    assert result.status is not Status.FAILED, result.error
    snapshot.snapshot_dir = before.parent
    findings = _render_findings(result.findings)
    if case.startswith("noop_"):
        assert result.new_text == text, "a noop_ fixture must not change"
        assert not findings, findings
        assert not (before.parent / f"{case}.after.py").exists()
    elif result.new_text == text:
        assert findings, "a fixture that neither changes nor refuses: name it noop_*"
        assert not (before.parent / f"{case}.after.py").exists()
    else:
        snapshot.assert_match(result.new_text, f"{case}.after.py")
    if case.startswith("refuse_"):
        assert findings, "a refuse_ fixture must produce findings"
    if findings or (before.parent / f"{case}.findings.txt").exists():
        snapshot.assert_match(findings, f"{case}.findings.txt")
    assert result.new_text is not None
    compile(result.new_text, f"{case}.after.py", "exec", dont_inherit=True)
    again = migrate_source(result.new_text, path=f"{case}.py", select=[rule_id], target=target)
    assert again.new_text == result.new_text, "a second run must change nothing"


def test_every_fixture_folder_has_cases() -> None:
    for folder in FIXTURES.iterdir():
        if folder.is_dir() and folder.name != "projects":
            assert list(folder.glob("*.before.py")), f"{folder.name} has no fixtures"
