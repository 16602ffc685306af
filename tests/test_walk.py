"""`cstutil.walk` makes exactly the calls LibCST's own `visit` makes, without rebuilding;
`cstutil.starts` gives exactly PositionProvider's starts."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from est2tpu.cstutil import child_fields, descendants, starts, walk

REPO = Path(__file__).resolve().parents[1]
LIBCST_SOURCES = Path(cst.__file__).parent

# Syntax the fixtures may not have: every compound statement, match, async, walrus,
# f-strings, star targets, type parameters, decorators, global/nonlocal, except*.
EVERYTHING = """
from __future__ import annotations
import a.b as c, d
from .e import (f as g, h)
type Alias[T: int = str, *Ts, **P] = list[T]
@dec(1)
@other.attr
class K[T](Base, metaclass=M):
    x: int = 1
    async def m[U](self, /, a, b=2, *args, c, d: int = 3, **kw) -> U | None:
        global q
        nonlocal_ = lambda x, *y, z=1, **w: (x, y, z, w)
        async with ctx() as (p, q), other():
            async for i, *rest in agen():
                await thing(*rest, **{"k": i})
        try:
            pass
        except* ValueError as err:
            raise RuntimeError from err
        else:
            del x[1:2:3], y.z
        finally:
            assert (n := len(rest)) > 0, f"{n!r:>{width}} {'nested' + f'{x}'}"
        match point:
            case Point(x=0, y=0) | [1, 2, *others] | {"k": v, **kw} if v > 0:
                yield from gen()
            case str() as s:
                return s
            case _:
                pass
        while True:
            break
        else:
            continue_ = [y async for y in z if y] + [{k: v} for k, v in d.items()]
        with open(p) as fh: print(fh, sep="", end=""); x += 1; x @= m; print(*a, ~b, not c, -d)
        if a: b
        elif c: d
        else: e
        return (yield), {*s}, {1, 2}, (1,), a if b else c, a[...], r"raw" "concat", b"x"
"""


class Recorder(cst.CSTVisitor):
    """Records every on_visit/on_leave; prunes the bodies of functions named `skip*`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.calls.append(("visit", id(node)))
        super().on_visit(node)
        return not (isinstance(node, cst.FunctionDef) and node.name.value.startswith("skip"))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.calls.append(("leave", id(original_node)))


def same_calls(module: cst.Module) -> None:
    libcst_walk, ours = Recorder(), Recorder()
    module.visit(libcst_walk)
    walk(module, ours)
    assert ours.calls == libcst_walk.calls
    same_starts(module)


def same_starts(module: cst.Module) -> None:
    expected = {
        id(node): (code_range.start.line, code_range.start.column)
        for node, code_range in MetadataWrapper(module, unsafe_skip_copy=True)
        .resolve(PositionProvider)
        .items()
    }
    nodes = descendants(module)
    assert starts(module, nodes) == expected
    # Asked for a few nodes only (a statement line takes its start from its first statement,
    # which is then not asked for): the same starts, and nothing else.
    few = [node for node in nodes if isinstance(node, (cst.SimpleStatementLine, cst.Call))]
    assert starts(module, few) == {id(node): expected[id(node)] for node in few}


def test_every_construct() -> None:
    same_calls(cst.parse_module(EVERYTHING + "def skip_me():\n    hidden(1)\n"))


def test_starts_with_other_line_endings() -> None:
    for newline in ("\r\n", "\r"):
        same_starts(cst.parse_module(EVERYTHING.replace("\n", newline)))


def sources() -> list[object]:
    fixtures = sorted((REPO / "fixtures").rglob("*.py"))
    # est2tpu's sources (big modules, 15 s) and LibCST's own (its biggest and oddest code, a
    # minute): not in `make check`, which walks the fixtures, the code the rules are for.
    bigger = sorted(REPO.glob("est2tpu/**/*.py")) + sorted(LIBCST_SOURCES.rglob("*.py"))[::5]
    return fixtures + [pytest.param(p, marks=pytest.mark.slow) for p in bigger]


@pytest.mark.parametrize("path", sources(), ids=lambda p: p.name)
def test_real_code(path: Path) -> None:
    try:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        pytest.skip("not parseable by this LibCST")
    same_calls(module)


def test_walk_does_not_rebuild() -> None:
    module = cst.parse_module("x = f(1)\n")
    seen: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            seen.append(node)

    walk(module, Collect())
    statement = module.body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    assert seen == [statement.body[0].value]  # type: ignore[attr-defined]
    assert seen[0] is statement.body[0].value  # type: ignore[attr-defined]


def test_every_node_class_has_readable_child_fields() -> None:
    """No class falls back to LibCST's (rebuilding) visit with this LibCST version."""
    classes = [
        cls
        for name in dir(cst)
        if isinstance(cls := getattr(cst, name), type)
        and issubclass(cls, cst.CSTNode)
        and not name.startswith("Base")
        and "_visit_and_replace_children" in vars(cls)
    ]
    assert len(classes) > 100
    assert all(child_fields(cls) is not None for cls in classes)
