"""`engine._add_imports` (LibCST's AddImportsVisitor run over a module's head, the rest of
the body appended) gives the text the visitor gives over the whole module, for every module
the fixtures hold and for the shapes the head's cut has to get right."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from est2tpu.engine import _add_imports

REPO = Path(__file__).resolve().parents[1]
# (module, object, alias): what the rules ask for, and the kinds the visitor treats apart
REQUESTS = [
    [("tensorflow", None, "tf")],
    [("est2tpu.runtime", None, "tpu_runtime"), ("tensorflow", None, "tf")],
    [("est2tpu", "runtime", "tpu_runtime")],
    [("tensorflow.compat", "v1", None), ("os", None, None)],
    [("__future__", "annotations", None), ("functools", "partial", None)],
]
SHAPES = {
    "empty": "",
    "docstring_only": '"""Doc."""\n',
    "statement_first": "x = 1\nimport os\n\ndef f():\n    import sys\n",
    "docstring_then_imports": '"""Doc."""\nimport os\nfrom tensorflow import compat\n\ny = 2\n',
    "strict_flag": "__strict__ = True\nimport os\ny = 2\n",
    "future_first": "from __future__ import annotations\nimport os\n",
    "comment_above_code": "import os\n# a comment\ny = 2\n",
    "compound_first": "if True:\n    import os\nimport sys\n",
    "semicolons": "import os; import sys\nfrom est2tpu import cli\n",
    "star": "from est2tpu import *\nimport os\n",
    "from_extended": "from est2tpu import cli\nfrom functools import wraps\n\nz = 3\n",
    "imports_only": "import os\nimport sys\n",
}
# The modules the rules migrate: every fixture's `.before.py` and the example projects.
FILES = sorted(REPO.glob("fixtures/*/*.before.py")) + sorted(REPO.glob("fixtures/projects/**/*.py"))


def _full(module: cst.Module, requests: list[tuple[str, str | None, str | None]]) -> str:
    context = CodemodContext(filename="m.py")
    for mod, obj, alias in requests:
        AddImportsVisitor.add_needed_import(context, mod, obj, alias)
    return AddImportsVisitor(context).transform_module(module).code


def _head(module: cst.Module, requests: list[tuple[str, str | None, str | None]]) -> str:
    context = CodemodContext(filename="m.py")
    for mod, obj, alias in requests:
        AddImportsVisitor.add_needed_import(context, mod, obj, alias)
    return _add_imports(context, module).code


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_head_only_equals_the_whole_module_on_each_shape(name: str) -> None:
    module = cst.parse_module(SHAPES[name])
    for requests in REQUESTS:
        assert _head(module, requests) == _full(module, requests), requests


@pytest.mark.slow
def test_head_only_equals_the_whole_module_on_every_fixture() -> None:
    """Each module's head under one of two requests, in turn: imports of a module (runtime and
    tensorflow), or of a name from a module beside a plain one; each of them over more than
    a hundred modules (every request over every shape is the test above). The whole-module
    visitor, the oracle, is what this test's time goes to."""
    assert len(FILES) > 200
    for n, path in enumerate(FILES):
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        requests = (REQUESTS[1], REQUESTS[3])[n % 2]
        assert _head(module, requests) == _full(module, requests), (path, requests)
