"""Diffs of notebooks as people read them: each changed code cell's source lines under a
``nb.ipynb:cell N`` header, as nbdime and ruff show them.

The file written stays the notebook's JSON; only what is shown differs. The ``json`` format
is the diff of that JSON text, which ``git apply`` and ``patch`` apply.
"""

from __future__ import annotations

import difflib
import enum
import json
from collections.abc import Iterator

from est2tpu import report
from est2tpu.ftypes import FileResult

__all__ = ["NotebookDiff", "cell_diff", "diff"]

_NO_NEWLINE = "\\ No newline at end of cell\n"


class NotebookDiff(str, enum.Enum):
    """How `--diff` shows a notebook."""

    CELLS = "cells"  # the changed cells' source lines, `nb.ipynb:cell N` headers
    JSON = "json"  # the diff of the file's JSON text: a patch that git apply applies


def diff(result: FileResult, notebook: NotebookDiff = NotebookDiff.CELLS) -> str:
    """The diff to show for one result; "" when nothing changes.

    A ``.py`` file (or stdin) is always a unified diff of its text. A notebook is shown by
    cells with ``NotebookDiff.CELLS``, and as the diff of its JSON with ``NotebookDiff.JSON``
    or when its cells cannot be paired (not JSON, or a different number of cells).
    """
    if notebook is NotebookDiff.CELLS and result.path.suffix == ".ipynb":
        by_cell = cell_diff(result)
        if by_cell is not None:
            return by_cell
    return report.unified_diff(result)


def cell_diff(result: FileResult) -> str | None:
    """The cell-by-cell diff of a notebook result ("" when no cell changed), or None when
    the old and new JSON do not hold the same list of cells."""
    old, new = _cells(result.old_text), _cells(result.new_text)
    if old is None or new is None or len(old) != len(new):
        return None
    path = result.path.as_posix()
    out: list[str] = []
    for number, (before, after) in enumerate(zip(old, new, strict=True), start=1):
        if before != after:
            out.extend(_source_diff(before, after, f"{path}:cell {number}"))
    return "".join(out)


def _cells(text: str | None) -> list[str] | None:
    """Each cell's source as one string, in notebook order (markdown cells included, so that
    the numbers are the ones a notebook shows); None when ``text`` is not a notebook."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    out = []
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        out.append(source if isinstance(source, str) else "")
    return out


def _source_diff(old: str, new: str, name: str) -> Iterator[str]:
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{name}", f"b/{name}"):
        if line.endswith(("\n", "\r")):
            yield line
        elif line[:1] in "+- " and not line.startswith(("---", "+++")):
            # A cell's last line usually has no line ending. That is said, as git says it,
            # only when the change is whether the cell ends in one.
            yield line + "\n"
            if _ends_line(old) != _ends_line(new):
                yield _NO_NEWLINE
        else:
            yield line + "\n"


def _ends_line(text: str) -> bool:
    return text.endswith(("\n", "\r"))
