"""`cstutil.literal_text` is LibCST's `evaluated_value` of every string literal: the
spellings a quick reading could get wrong, and every literal of est2tpu's own code."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from est2tpu.cstutil import descendants, literal_text

REPO = Path(__file__).resolve().parents[1]

SPELLINGS = [
    "''",
    '""',
    '""""""',
    "''''''",
    "'batch_size'",
    '"batch_size"',
    '"it\'s"',
    "'say \"hi\"'",
    "\"'''\"",
    '"""a"b"""',
    '""""a"""',
    "'''x\ny'''",
    '"""x\r\ny"""',
    '"""x\ry"""',
    '"tab\\tstop"',
    '"batch\\x5fsize"',
    '"\\N{BULLET}"',
    "r'raw\\d'",
    "R'raw'",
    "b'bytes'",
    "rb'\\x00'",
    "u'unicode'",
    "'caf\u00e9'",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_spelling_reads_as_python_reads_it(spelling: str) -> None:
    node = cst.parse_expression(spelling)
    assert isinstance(node, cst.SimpleString)
    assert literal_text(node) == node.evaluated_value == eval(spelling)


def test_every_literal_of_this_projects_code() -> None:
    seen = 0
    for path in sorted((REPO / "est2tpu").rglob("*.py")):
        module = cst.parse_module(path.read_bytes())
        for node in descendants(module):
            if isinstance(node, cst.SimpleString):
                assert literal_text(node) == node.evaluated_value, (path, node.value)
                seen += 1
    assert seen > 3_000
