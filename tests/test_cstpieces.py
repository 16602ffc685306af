"""`cstpieces.parse` gives the tree `cst.parse_module` gives, node for node.

The text is cut into runs of a few lines here (a piece of 2 or 3 lines instead of
hundreds), so that every kind of block boundary, comment and indentation in real code
meets a cut: the fixtures, the example projects, est2tpu's own modules and text written
for the corners (comments at other indentations, decorators, `a; b` lines, strings over
several lines, CRLF and tab-indented text, a text without a last newline).
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from est2tpu import cstpieces
from est2tpu.checks import parse as checked_parse

REPO = Path(__file__).resolve().parent.parent

CORNERS = {
    "comments": (
        "import os\n\n\ndef main(a):\n    x = 1\n    # before y\n    y = 2\n"
        "# at column 0 inside\n    z = 3\n\n\n    # indented, after a gap\n    w = 4\n"
        "        # deeper\n    v = 5\n    return x  # trailing\n    # block footer\n\n"
        "# module footer\n"
    ),
    "decorators_and_classes": (
        "import functools\n\n\nclass A:\n    a = 1\n    b = 2\n\n    @staticmethod\n"
        "    @functools.wraps(print)\n    def f(x):\n        return x\n\n    c = 3\n"
        "    d = 4\n\n    def g(self):\n        pass\n    e = 5\n"
    ),
    "semicolons_and_strings": (
        "def f():\n    a = 1; b = 2\n    s = '''one\ntwo\n    three'''\n    c = (1,\n"
        "         2)\n    d = 3 \\\n        + 4\n    e = 5\n    g = 6\n    return a\n"
    ),
    "compound": (
        "def f(x):\n    t = 0\n    for i in x:\n        t += i\n        t -= 1\n"
        "        t *= 2\n        t //= 3\n    else:\n        t = 1\n        t = 2\n"
        "        t = 3\n    try:\n        a = 1\n        b = 2\n        c = 3\n"
        "    except ValueError:\n        d = 1\n        e = 2\n        f = 3\n"
        "    finally:\n        g = 1\n        h = 2\n        i = 3\n    if t:\n"
        "        j = 1\n        k = 2\n    elif t > 1:\n        m = 1\n        n = 2\n"
        "        o = 3\n    with open(x) as fh:\n        p = 1\n        q = 2\n"
        "        r = 3\n    while t:\n        t -= 1\n        u = 1\n        v = 2\n"
        "    async def g():\n        await h()\n        await h()\n        await h()\n"
        "    return t\n"
    ),
    "crlf_tabs_no_last_newline": (
        "def f():\r\n\ta = 1\r\n\tb = 2\r\n\tc = 3\r\n\t# note\r\n\td = 4\r\n"
        "\tif a:\r\n\t\te = 5\r\n\t\tf = 6\r\n\t\tg = 7\r\n\treturn a"
    ),
    "top_level_script": "".join(
        f"est.evaluate(lambda: input_fn(), steps={n})\n" for n in range(40)
    ),
    "two_space_indent_first_in_a_run": (
        "a = 1\nb = 2\nc = 3\nif a:\n  d = 4\ne = 5\nf = 6\ng = 7\nh = 8\n"
        "def k():\n    i = 1\n    j = 2\n    l = 3\n    m = 4\n    return i\n"
    ),
    "match": (
        "def f(p):\n    a = 1\n    match p:\n        case 1:\n            b = 1\n"
        "            c = 2\n            d = 3\n        case _:\n            e = 1\n"
        "            g = 2\n            h = 3\n    return a\n"
    ),
}


def _texts() -> list[tuple[str, str]]:
    files = sorted(REPO.glob("fixtures/*/*.py")) + sorted(REPO.glob("examples/**/*.py"))
    files += sorted(REPO.glob("est2tpu/*.py"))[::3] + sorted(REPO.glob("est2tpu/rules/tpu*.py"))
    texts = [(f.relative_to(REPO).as_posix(), f.read_text(encoding="utf-8")) for f in files]
    return texts + sorted(CORNERS.items())


def _tree(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


@pytest.mark.parametrize("piece_lines", [2, 5])
def test_pieces_give_the_whole_parse(piece_lines: int) -> None:
    cut = 0
    for name, text in _texts():
        whole = cst.parse_module(text)
        pieces = cstpieces.parse(text, _tree(text), piece_lines)
        assert pieces.deep_equals(whole), name
        assert pieces.code == text, name
        assert pieces.default_indent == whole.default_indent, name
        assert pieces.default_newline == whole.default_newline, name
        cut += pieces is not whole and text.count("\n") >= 2 * piece_lines
    assert cut > 40


def test_a_long_function_is_cut_and_equal() -> None:
    body = "".join(
        f"    est.{m}(lambda: input_fn({{'batch_size': {n}}}), steps={n})  # call {n}\n"
        + ("\n    # a section\n" if n % 50 == 0 else "")
        for n in range(3000)
        for m in ["train", "evaluate", "predict"][n % 3 : n % 3 + 1]
    )
    text = f"import tensorflow as tf\n\n\ndef main(est):\n{body}    return est\n"
    parsed = []

    real = cst.parse_module

    def counting(source: str, *args: object, **kwargs: object) -> cst.Module:
        parsed.append(source.count("\n"))
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    cstpieces.cst.parse_module = counting  # type: ignore[assignment]
    try:
        module = cstpieces.parse(text, ast.parse(text))
    finally:
        cstpieces.cst.parse_module = real  # type: ignore[assignment]
    assert max(parsed) < 2 * cstpieces.PIECE_LINES + 10  # never the whole text at once
    assert module.deep_equals(real(text))
    assert checked_parse(text).deep_equals(module)


def test_what_python_cannot_parse_is_parsed_whole() -> None:
    # LibCST reads `print "x"`-free newer syntax Python may not; without Python's tree the
    # text is parsed whole, and a syntax error is LibCST's own.
    text = "def f():\n" + "    x = 1\n" * 50 + "    y = (\n"
    with pytest.raises(cst.ParserSyntaxError):
        cstpieces.parse(text, None, 2)
