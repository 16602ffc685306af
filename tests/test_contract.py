"""One rule = one ID = one catalogue entry = one code class = one fixture folder."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from est2tpu import catalogue
from est2tpu.catalogue import REQUIRED_SECTIONS, data_dir
from est2tpu.registry import rule_classes
from est2tpu.rule import Rule

ROOT = Path(__file__).resolve().parent.parent

# Engine-level IDs: checks the API runs after the rules (E2T001, unused suppressions, tested in
# tests/test_suppressions.py; E2T002, notebook magic cells holding Estimator code, tested in
# tests/test_notebook_magics.py; E2T003, ambiguous imports, in tests/test_hostile_notebooks.py).
# They have a catalogue entry (so `explain`, `--ignore` and
# SARIF know them) but no rule class and no fixture folder.
ENGINE_LEVEL_PREFIX = "E2T"


def test_ids_match_everywhere() -> None:
    code = {cls.ID for cls in rule_classes()}
    docs = {i for i in catalogue.load() if not i.startswith(ENGINE_LEVEL_PREFIX)}
    folders = {
        p.name for p in data_dir("fixtures").iterdir() if p.is_dir() and p.name != "projects"
    }
    assert code == docs, "every rule class needs rules/<ID>.md and vice versa"
    assert code == folders, "every rule needs fixtures/<ID>/ and vice versa"


def test_code_module_named_after_id_and_name() -> None:
    docs = catalogue.load()
    for cls in rule_classes():
        info = docs[cls.ID]
        expected = f"{info.id.lower()}_{info.name.replace('-', '_')}"
        assert cls.__module__.rsplit(".", 1)[-1] == expected, (
            f"rename it est2tpu/rules/{expected}.py"
        )


def test_metadata_comes_from_the_catalogue_only() -> None:
    docs = catalogue.load()
    for cls in rule_classes():
        info = docs[cls.ID]
        assert (cls.NAME, cls.SAFETY, cls.TARGETS) == (info.name, info.safety, info.targets)
        source = Path(sys.modules[cls.__module__].__file__ or "").read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    names = [t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)]
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        names.append(stmt.target.id)
                    assert not {"ID", "NAME", "SAFETY", "TARGETS"} & set(names), cls.ID


def test_a_rule_that_declares_its_metadata_is_refused() -> None:
    namespace = {"__name__": "est2tpu.rules.tpu004_cross_shard_optimizer", "Rule": Rule}
    with pytest.raises(TypeError, match=r"ID belong in rules/TPU004.md"):
        exec("class Again(Rule):\n    ID = 'TPU004'\n", namespace)  # noqa: S102
    with pytest.raises(TypeError, match=r"no catalogue entry rules/TPU999.md"):
        unknown = {**namespace, "__name__": "est2tpu.rules.tpu999_x"}
        exec("class Unknown(Rule):\n    pass\n", unknown)  # noqa: S102


def test_docs_have_the_fixed_headings() -> None:
    for info in catalogue.load().values():
        headings = [line[3:].strip() for line in info.docs.splitlines() if line.startswith("## ")]
        assert headings == list(REQUIRED_SECTIONS), f"{info.id}: {headings}"
        for section in REQUIRED_SECTIONS:
            assert info.sections[section].strip(), f"{info.id}: empty {section}"


def test_engine_level_ids_have_no_rule_class() -> None:
    engine_level = {i for i in catalogue.load() if i.startswith(ENGINE_LEVEL_PREFIX)}
    assert engine_level == {"E2T001", "E2T002", "E2T003"}, (
        "document a new engine-level ID here and in its tests"
    )
    assert not engine_level & {cls.ID for cls in rule_classes()}


def test_targets_match() -> None:
    docs = catalogue.load()
    for cls in rule_classes():
        assert set(cls.TARGETS) == set(docs[cls.ID].targets), cls.ID


def test_readme_rules_table_is_current() -> None:
    from est2tpu.catalogue import markdown_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- rules-table:start -->\n(.*?)<!-- rules-table:end -->", readme, re.DOTALL
    )
    assert match, "README lacks the rules-table block"
    assert match.group(1) == markdown_table(), (
        "README rules table is stale: run `python scripts/update-readme.py`"
    )
