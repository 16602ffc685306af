"""Documents speak about the tool as it is: no document, rule page, docstring or comment names an
issue number, a session of work, a seed document or a round of work. History lives in git and in
CHANGELOG.md (not scanned).

Markdown, shell scripts and the Makefile are read whole; Python files by their comments and
docstrings (a string literal that is data, such as a test's input, is not a document).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_ORDINAL = (
    r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
    r"|\d+(?:st|nd|rd|th)|this|last|previous|earlier|next|later"
)
#: What names development history. Each pattern is a whole phrase: "session" alone is a
#: TensorFlow word (tf.compat.v1.Session) and "seed" a random seed.
PATTERNS = {
    "issue number": re.compile(r"(?<![\w/.-])(?:issues?|tickets?)\s*#?\d+", re.IGNORECASE),
    "session": re.compile(
        rf"\b(?:{_ORDINAL})\s+(?:work\s+)?sessions?\b|\bsessions?\s+\d+\b|\bwork\s+sessions?\b",
        re.IGNORECASE,
    ),
    "seed document": re.compile(
        r"\bseeds?\s*`?0\d\d|\bseeds/|shared/seeds|\bseed\s+`?\d{3}_|§\s?\d", re.IGNORECASE
    ),
    "round of work": re.compile(
        r"\b(?:this|last|previous|earlier|next|that)\s+rounds?\b|\bearlier\s+rounds\b"
        r"|\bre-?run\s+this\s+round\b",
        re.IGNORECASE,
    ),
}

DOCUMENTS = ("README.md", "CONTRIBUTING.md", "Makefile")
DOC_DIRS = ("docs", "rules", "scripts", "bench", "tests", "est2tpu")
CODE_DIRS = ("est2tpu", "tests", "bench", "scripts")


def hits(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, kind, matched text) for each phrase of history in ``text``."""
    for kind, pattern in PATTERNS.items():
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield line, kind, match.group(0)


def python_documents(source: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of every comment and docstring of a Python module."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    for token in tokens:
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for statement in node.body:
            # A docstring, or a string standing as a statement (an attribute's doc comment).
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                yield statement.lineno, statement.value.value


def _text_files() -> list[Path]:
    files = [REPO / name for name in DOCUMENTS]
    for folder in DOC_DIRS:
        files += sorted((REPO / folder).rglob("*.md"))
    files += sorted((REPO / "scripts").glob("*.sh"))
    return [f for f in files if f.is_file()]


def _python_files(folder: str) -> list[Path]:
    return sorted(p for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _report(found: list[str]) -> str:
    return "history in documents (move it to the commit message or CHANGELOG):\n" + "\n".join(found)


@pytest.mark.parametrize("path", _text_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_documents_name_no_history(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [
        f"{path.relative_to(REPO)}:{line}: {kind}: {matched!r}"
        for line, kind, matched in hits(text)
    ]
    assert not found, _report(found)


@pytest.mark.parametrize("folder", CODE_DIRS)
def test_code_comments_and_docstrings_name_no_history(folder: str) -> None:
    found = []
    for path in _python_files(folder):
        if path == Path(__file__).resolve():
            continue
        for start, text in python_documents(path.read_text(encoding="utf-8")):
            for line, kind, matched in hits(text):
                found.append(f"{path.relative_to(REPO)}:{start + line - 1}: {kind}: {matched!r}")
    assert not found, _report(found)


@pytest.mark.parametrize(
    "text",
    [
        "measured before issues 16-23",
        "(issue 17)",
        "see issue #4",
        "after the seventh session",
        "in session 3",
        "as in seed 002 §6",
        "the seed `000_*` question",
        "read shared/seeds first",
        "not re-run this round",
        "earlier rounds: CHANGELOG",
    ],
)
def test_history_is_recognised(text: str) -> None:
    assert list(hits(text)), text


@pytest.mark.parametrize(
    "text",
    [
        "tf.compat.v1.Session runs the graph; sessions are TF1-only",
        "one session.run per iterations_per_loop steps",
        "RunConfig(tf_random_seed=7) seeds the graph; the seed is 20240611",
        "pytest-dev/pytest-xdist#1386 is upstream's report",
        "rounds the loss to 4 digits",
        "original #1 and original #2 agree",
        "cell 3 of nb.ipynb",
    ],
)
def test_tool_words_are_not_history(text: str) -> None:
    assert not list(hits(text)), list(hits(text))
