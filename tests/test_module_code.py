"""`index.module_code` gives `module.code`, and reuses the tokens of the top-level
statements a changed tree shares with a tree it generated before."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from est2tpu.index import module_code

REPO = Path(__file__).resolve().parent.parent
CORNERS = [
    "",
    "\n",
    "x = 1",
    "# only a comment",
    "if x:\r\n\ty = 1\r\n# end",
    "def f():\n    pass\n\n\n# tail\n  # indented\n",
    "import a;import b",
    "\n\n# header\n\nclass A:\n  def f(self):\n    return 1\n",
]


@pytest.mark.parametrize(
    "text",
    [p.read_text(encoding="utf-8") for p in sorted(REPO.glob("fixtures/*/*.py"))] + CORNERS,
)
def test_module_code_is_the_code(text: str) -> None:
    module = cst.parse_module(text)
    assert module_code(module, {}) == module.code == text


def test_a_changed_tree_reuses_the_statements_it_shares() -> None:
    module = cst.parse_module("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    kept: dict[tuple[int, str, str], list[str]] = {}
    assert module_code(module, kept) == module.code
    assert len(kept) == 2
    second = module.body[1]
    assert isinstance(second, cst.FunctionDef)
    changed = module.with_changes(body=[module.body[0], second.with_changes(name=cst.Name("h"))])
    assert module_code(changed, kept) == changed.code
    assert len(kept) == 3  # the first def's tokens were reused
