"""Small LibCST helpers the rules share."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState

# -- building many nodes ------------------------------------------------------------------


@contextlib.contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector off while a large tree or index is built.

    A LibCST tree holds no cycles: its nodes are freed by their reference counts alone. But
    every 700 new objects start a collection, and the older generations' collections walk
    every live node again: parsing a module of 8,000 calls (400,000 nodes) spent a fifth of
    its time there, and the index built over it a quarter. Cycles made meanwhile are
    collected once the collector is back on. Nested uses keep it off until the outermost
    ends; a collector already off stays off.

    What was built while the collector was off is still young to it: the first
    collections after it is back on walk all of it (0.5 s, then 1 s, for that tree).
    `freeze` moves what is alive at the end to the collector's permanent generation
    (`gc.freeze`), which no collection walks: for what lives on and holds no cycles, a
    parsed tree or the modules just imported. Frozen objects are still freed by their
    reference counts; a cycle of garbage frozen with them is not, and a long run parses
    many trees: `thaw` gives the frozen objects back to the oldest generation once the trees
    are done with (the engine after a module it parsed itself, `api` at the end of a run).
    """
    if not gc.isenabled():
        yield
        if freeze:
            gc.freeze()
        return
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        gc.enable()


def thaw() -> None:
    """What `gc_paused(freeze=True)` froze, back to the collector's oldest generation
    (`gc.unfreeze`), where a full collection frees the cycles of garbage among it."""
    gc.unfreeze()


# -- a read-only walk ---------------------------------------------------------------------
#
# LibCST's `node.visit(visitor)` rebuilds every node it passes, even for a read-only
# CSTVisitor (it shares the transformer's code path): on a 4,500-line file that is 0.20 s
# per walk. `walk` calls the same `on_visit`/`on_leave` (so `visit_<Type>` returning False
# still prunes) in the same order without rebuilding anything: 0.04 s. The order of a
# node's children is LibCST's own, read once per class from its `_visit_and_replace_children`
# (which visits them in source order as `visit_<kind>(self, "<field>", ...)`); a class whose
# code cannot be read that way is walked by LibCST itself. `tests/test_walk.py` holds the
# two walks to the same sequence of calls on real code. Attribute hooks
# (`visit_<Type>_<field>`) are not called: no visitor here defines one.

_CHILD_FIELD = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
_FIELDS: dict[type, tuple[str, ...] | None] = {}


class SubclassTest(dict[type, bool]):
    """`IS_NODE[type(x)]` is `isinstance(x, cst.CSTNode)`, learned once per type.

    LibCST's node bases are abstract classes: `isinstance` against one goes through
    `ABCMeta.__instancecheck__`, a Python-level call. The walks and the rules' per-node
    hooks made 12 million of them on the fixture projects (13.25 -> 12.4-12.8 s of CPU).
    """

    def __init__(self, base: type) -> None:
        super().__init__()
        self.base = base

    def __missing__(self, cls: type) -> bool:
        self[cls] = found = issubclass(cls, self.base)
        return found


IS_NODE = SubclassTest(cst.CSTNode)
IS_STATEMENT = SubclassTest(cst.BaseStatement)


def child_fields(cls: type) -> tuple[str, ...] | None:
    """The fields holding a node class's children, in LibCST's visiting order (or None)."""
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    try:
        source = inspect.getsource(cls._visit_and_replace_children)  # type: ignore[attr-defined]
        fields: tuple[str, ...] | None = tuple(dict.fromkeys(_CHILD_FIELD.findall(source)))
    except (AttributeError, OSError, TypeError):
        fields = None
    _FIELDS[cls] = fields
    return fields


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for a read-only visitor, without rebuilding the tree."""
    hooks = _hooks(visitor)
    if hooks is None:
        _walk(node, visitor)
    else:
        _walk_hooked(node, visitor, hooks)


def _walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    fields = child_fields(type(node))
    if fields is None:
        node.visit(visitor)
        return
    if visitor.on_visit(node):
        for name in fields:
            value = getattr(node, name)
            if IS_NODE[type(value)]:
                _walk(value, visitor)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if IS_NODE[type(item)]:
                        _walk(item, visitor)
    visitor.on_leave(node)


# The trivia of a tree (whitespace, comments, operators, brackets: nodes whose children are
# only such nodes), about half its nodes. A visitor with no hook for any of them learns
# nothing from them: `walk` passes them by.
_TRIVIA_MODULES = ("libcst._nodes.op", "libcst._nodes.whitespace")
_TRIVIA_EXTRA = frozenset(
    {
        "LeftParen",
        "RightParen",
        "LeftSquareBracket",
        "RightSquareBracket",
        "LeftCurlyBrace",
        "RightCurlyBrace",
        "Asynchronous",
    }
)
# Names and literals: nodes whose children are only trivia (their parentheses). A visitor
# with no hook for one of them, nor for any trivia, learns nothing there either (the rules'
# walks pass them by too: `rulewalk.skipped`).
LEAVES = frozenset(
    {cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis}
)
_Hook = Callable[..., object] | None


class _Hooks(dict[type, tuple[_Hook, _Hook]]):
    """A visitor class's `visit_<Type>`/`leave_<Type>` by node class, found as classes are
    met; `passable[cls]`: whether the walk need not enter nodes of the class."""

    def __init__(self, visitor_cls: type) -> None:
        super().__init__()
        self.visitor_cls = visitor_cls
        self.passable = _Passable(self)

    def __missing__(self, cls: type) -> tuple[_Hook, _Hook]:
        self[cls] = pair = (
            _unbound(self.visitor_cls, f"visit_{cls.__name__}"),
            _unbound(self.visitor_cls, f"leave_{cls.__name__}"),
        )
        return pair


class _Passable(dict[type, bool]):
    def __init__(self, hooks: _Hooks) -> None:
        super().__init__()
        self.hooks = hooks

    def __missing__(self, cls: type) -> bool:
        self[cls] = found = IS_TRIVIA[cls] or (cls in LEAVES and self.hooks[cls] == (None, None))
        return found


# By visitor class, in the class's own namespace: the helpers below define their visitor
# class at each call, and a class that is gone takes its entry with it. A table beside the
# classes would keep them alive, a weak one too: an entry's hooks are the class's functions,
# and a hook that names its class (`V.found = True`) holds it. Each class kept alive is one
# more that `isinstance(visitor, cst.CSTVisitor)` (LibCST asks it at each node) goes through
# for every new visitor class: a long run would slow down as it goes.
_HOOKS_ATTR = "_est2tpu_walk_hooks"
_LIBCST_VISITORS = frozenset(cst.CSTVisitor.__mro__)


def _is_trivia(cls: type) -> bool:
    return cls.__module__ in _TRIVIA_MODULES or cls.__name__ in _TRIVIA_EXTRA


def _hooks(visitor: cst.CSTVisitor) -> _Hooks | None:
    """The visitor's `visit_<Type>`/`leave_<Type>` by node class (filled as classes are
    met), when its class calls them as `CSTVisitor` does and hooks no trivia; else None
    (the visitor is walked through `on_visit`/`on_leave` at every node)."""
    cls = type(visitor)
    try:
        hooks: _Hooks | None = vars(cls)[_HOOKS_ATTR]  # its own, not a base class's
    except KeyError:
        plain = cls.on_visit is cst.CSTVisitor.on_visit and cls.on_leave is cst.CSTVisitor.on_leave
        # The names the visitor's own classes define (LibCST's `CSTVisitor` hooks nothing).
        hooked_trivia = any(
            _is_trivia(node_cls)
            for klass in cls.__mro__
            if klass not in _LIBCST_VISITORS
            for name in vars(klass)
            if name.startswith(("visit_", "leave_")) and _unbound(cls, name) is not None
            for node_cls in [getattr(cst, name.partition("_")[2], None)]
            if isinstance(node_cls, type)
        )
        hooks = _Hooks(cls) if plain and not hooked_trivia else None
        setattr(cls, _HOOKS_ATTR, hooks)
    if hooks is not None and any(k.startswith(("visit_", "leave_")) for k in vars(visitor)):
        return None  # hooks set on the instance: LibCST's `getattr` finds those first
    return hooks


def _walk_hooked(node: cst.CSTNode, visitor: cst.CSTVisitor, hooks: _Hooks) -> None:
    cls = type(node)
    fields = child_fields(cls)
    if fields is None:
        node.visit(visitor)
        return
    visit, leave = hooks[cls]
    if visit is None or visit(visitor, node) is not False:
        passable = hooks.passable
        for name in fields:
            value = getattr(node, name)
            kind = type(value)
            if IS_NODE[kind]:
                if not passable[kind]:
                    _walk_hooked(value, visitor, hooks)
            elif kind is tuple or kind is list:
                for item in value:
                    kind = type(item)
                    if IS_NODE[kind] and not passable[kind]:
                        _walk_hooked(item, visitor, hooks)
    if leave is not None:
        leave(visitor, node)


def _unbound(cls: type, name: str) -> Callable[..., object] | None:
    """The visitor class's own hook `name` (None where it is `CSTVisitor`'s, which does
    nothing)."""
    found = getattr(cls, name, None)
    if found is None or found is getattr(cst.CSTVisitor, name, None):
        return None
    if inspect.isfunction(found):
        return found
    return lambda visitor, node: getattr(visitor, name)(node)  # a static method, a callable


class _TriviaTest(dict[type, bool]):
    def __missing__(self, cls: type) -> bool:
        self[cls] = found = _is_trivia(cls)
        return found


IS_TRIVIA = _TriviaTest()


def descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node` and every node under it, in LibCST's visiting order."""
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            found.append(n)
            return True

    walk(node, Collect())
    return found


# -- where nodes start ----------------------------------------------------------------------
#
# LibCST's PositionProvider makes a CodeRange for every node of the module (a regular
# expression per token, a context manager and a dict entry per node): 0.76 s for one of
# tensorflow_estimator's big modules, where generating its code takes 0.11 s. A finding needs
# the start of a handful of nodes. `starts` generates the code once and keeps the line and
# column only where one of those nodes starts, with PositionProvider's rules: the syntactic
# start (after the whitespace a node owns) where the node records one, else where its code
# begins. `tests/test_walk.py` holds it to PositionProvider on every node of real code.

_NEWLINE = re.compile(r"\r\n?|\n")


class _AllFound(Exception):
    pass


@dataclasses.dataclass
class _StartsState(CodegenState):
    wanted: set[int] = dataclasses.field(default_factory=set)  # asked for, or needed
    asked: frozenset[int] = frozenset()
    remaining: int = 0  # of those asked for
    found: dict[int, tuple[int, int]] = dataclasses.field(default_factory=dict)
    line: int = 1
    column: int = 0
    _stack: list[tuple[int, int]] = dataclasses.field(default_factory=list)

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def _record(self, key: int, start: tuple[int, int]) -> None:
        if key in self.found:
            return  # a syntactic start, recorded inside the node, stays
        self.found[key] = start
        if key in self.asked:
            self.remaining -= 1
            if not self.remaining:
                raise _AllFound  # the code after the last node asked for is not generated

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self._record(id(node), self._stack.pop())

    @contextlib.contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Iterator[None]:
        if id(node) not in self.wanted:
            yield
        elif start_node is None:
            self._record(id(node), (self.line, self.column))
            yield
        else:  # the node starts where `start_node` does
            self.wanted.add(id(start_node))
            yield
            self._record(id(node), self.found[id(start_node)])


def starts(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """Where each of `nodes` (in `module`) starts, by id: (line from 1, column from 0), as
    LibCST's PositionProvider gives `.start`. Nodes not in `module` are left out."""
    asked = frozenset(id(node) for node in nodes)
    if not asked:
        return {}
    state = _StartsState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        wanted=set(asked),
        asked=asked,
        remaining=len(asked),
    )
    try:
        module._codegen(state)
    except _AllFound:
        pass
    return {key: start for key, start in state.found.items() if key in asked}


_N = TypeVar("_N", bound=cst.CSTNode)


def rewritten(node: _N, transformer: cst.CSTTransformer) -> _N:
    """`node.visit(transformer)`, or `node` itself when what the visit built is equal to it.

    LibCST's visit builds every node again, changed or not: a rule that returns a def
    rebuilt that way (its sub-transformer found nothing to edit) makes the engine take the
    tree for changed and generate the whole module's code again, to learn that it is not."""
    result = node.visit(transformer)
    if not isinstance(result, type(node)):
        raise TypeError(f"{type(transformer).__name__} replaced a {type(node).__name__}")
    return node if result.deep_equals(node) else result


def literal_text(node: cst.SimpleString) -> str | bytes:
    """`node.evaluated_value`: the value of a string literal. LibCST evaluates it with
    Python's own parser and compiler (`ast.literal_eval`), a tenth of the index's time on a
    module of 8,000 calls passing `{"batch_size": 8}`; a literal without a prefix, a
    backslash or a carriage return (which Python reads as a newline) is the text between
    its quotes."""
    raw = node.value
    if raw[0] in "'\"" and "\\" not in raw and "\r" not in raw:
        quote = 3 if raw[:3] in ('"""', "'''") and len(raw) >= 6 else 1
        return raw[quote:-quote]
    return node.evaluated_value


def kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Append `name=value` (after the last argument, keeping its trailing comma style)."""
    args = list(call.args)
    new = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    if args and isinstance(args[-1].comma, cst.Comma):
        # A trailing comma means one argument per line: the old last argument takes the
        # separator the others use, the new one takes the closing layout.
        closing = args[-1].comma
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            separator = args[-2].comma
        else:
            separator = cst.Comma(whitespace_after=call.whitespace_before_args)
        args[-1] = args[-1].with_changes(comma=separator)
        args.append(new.with_changes(comma=closing))
    elif args:
        # The space before `)` (a line break in a multi-line call) moves to the new last arg.
        before_paren = args[-1].whitespace_after_arg
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        args.append(new.with_changes(whitespace_after_arg=before_paren))
    else:
        args.append(new)
    return call.with_changes(args=args)


def rename_kwarg(call: cst.Call, old: str, new: str) -> cst.Call:
    args = [
        a.with_changes(keyword=cst.Name(new))
        if a.keyword is not None and a.keyword.value == old
        else a
        for a in call.args
    ]
    return call.with_changes(args=args)


def replace_kwarg_value(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    args = [
        a.with_changes(value=value) if a.keyword is not None and a.keyword.value == name else a
        for a in call.args
    ]
    return call.with_changes(args=args)


def add_param(fn: cst.FunctionDef, name: str) -> cst.FunctionDef:
    """Add a parameter after the existing positional ones (`=None` if they have defaults)."""
    params = list(fn.params.params)
    default: cst.BaseExpression | None = None
    if any(p.default is not None for p in params):
        default = cst.Name("None")
    new = cst.Param(
        name=cst.Name(name),
        default=default,
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        )
        if default is not None
        else cst.MaybeSentinel.DEFAULT,
    )
    if params:
        last = params[-1]
        if isinstance(last.comma, cst.Comma):
            params.append(new.with_changes(comma=last.comma))
        else:
            params[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
            params.append(new)
    else:
        params.append(new)
    return fn.with_changes(params=fn.params.with_changes(params=params))


def has_param(fn: cst.FunctionDef | cst.Lambda, name: str) -> bool:
    p = fn.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    return name in names


_Item = TypeVar("_Item", cst.Arg, cst.BaseDictElement)


def ending_as(kept: list[_Item], items: Sequence[_Item]) -> list[_Item]:
    """`kept`, some of a call's arguments or a dict's elements with others dropped, ending
    as `items` ended: its last takes the last item's comma (and an argument's space after
    it), so dropping the last item leaves neither a stray comma nor a lost one."""
    if kept and len(kept) < len(items):
        last = items[-1]
        if isinstance(last, cst.Arg):
            kept[-1] = kept[-1].with_changes(
                comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
            )
        else:
            kept[-1] = kept[-1].with_changes(comma=last.comma)
    return kept


def splats_params(arg: cst.Arg) -> bool:
    """`**params`: every key of a function's `params` handed on as keyword arguments."""
    return arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value == "params"


def passes_params_on(call: cst.Call) -> bool:
    """`helper(..., **params)`: the callee gets every key of `params` as an argument. A copy
    (`dict(DEFAULTS, **params)`) is not such a call: the builtin takes any key."""
    if isinstance(call.func, cst.Name) and call.func.value == "dict":
        return False
    return any(splats_params(a) for a in call.args)


def params_subscript(key: str = "batch_size") -> cst.Subscript:
    return cst.parse_expression(f'params["{key}"]')  # type: ignore[return-value]


def iter_calls(node: cst.CSTNode, *, into_defs: bool = False) -> Iterator[cst.Call]:
    """Every call under a node (not inside nested defs/lambdas unless `into_defs`)."""
    found: list[cst.Call] = []
    root = node

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return into_defs or n is root

        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    walk(node, V())
    return iter(found)


def assigned_names(fn: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    """Local names of a def (params included, nested defs excluded) -> assigned values."""
    names: dict[str, list[cst.BaseExpression | None]] = {}
    for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params):
        names.setdefault(p.name.value, []).append(None)

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            if n is not fn:
                names.setdefault(n.name.value, []).append(None)
                return False
            return True

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                for name in target_names(t.target):
                    names.setdefault(name, []).append(
                        n.value if isinstance(t.target, cst.Name) else None
                    )

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            for name in target_names(n.target):
                names.setdefault(name, []).append(n.value)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            for name in target_names(n.target):
                names.setdefault(name, []).append(None)

        def visit_For(self, n: cst.For) -> None:
            for name in target_names(n.target):
                names.setdefault(name, []).append(None)

        def visit_WithItem(self, n: cst.WithItem) -> None:
            if n.asname is not None:
                for name in target_names(n.asname.name):
                    names.setdefault(name, []).append(None)

    walk(fn, V())
    return names


def target_names(target: cst.BaseExpression) -> list[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`); attributes and
    subscripts bind none."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for el in target.elements:
            out += target_names(el.value)
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def names_read(node: cst.CSTNode) -> list[cst.Name]:
    """Name nodes under `node`, minus attribute names and keywords, not entering defs."""
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            walk(n.value, self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            walk(n.value, self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    walk(node, V())
    return found


def indented_blocks(node: cst.CSTNode, *, into_defs: bool = True) -> list[cst.IndentedBlock]:
    """The indented blocks under `node`, in visiting order; with `into_defs=False`, not those
    of the defs nested in it (`node` itself may be a def)."""
    found: list[cst.IndentedBlock] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return into_defs or n is node

        def visit_IndentedBlock(self, n: cst.IndentedBlock) -> None:
            found.append(n)

    walk(node, V())
    return found


def free_names(node: cst.CSTNode) -> list[cst.Name]:
    """Name nodes read in an expression, minus attribute names, keywords and names bound
    by lambdas/comprehensions inside it."""
    found: list[cst.Name] = []
    bound: list[set[str]] = [set()]

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            walk(n.value, self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            walk(n.value, self)
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            p = n.params
            bound.append({x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)})
            walk(n.body, self)
            bound.pop()
            return False

        def visit_CompFor(self, n: cst.CompFor) -> None:
            bound[-1].update(target_names(n.target))

        def visit_Name(self, n: cst.Name) -> None:
            if not any(n.value in b for b in bound):
                found.append(n)

    walk(node, V())
    return found


#: What one level of indentation is in the module being migrated (LibCST's
#: `Module.default_indent`): the engine sets it for each module, `explode` indents by it.
INDENT: ContextVar[str] = ContextVar("INDENT", default="    ")


def _continuation(depth: int) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=[],
        indent=True,
        last_line=cst.SimpleWhitespace(INDENT.get() * depth),
    )


def explode(call: cst.Call, depth: int = 1) -> cst.Call:
    """One argument per line, `depth` levels (of the module's `INDENT`) deeper than the
    statement, trailing comma."""
    args = list(call.args)
    out = []
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        out.append(
            arg.with_changes(
                comma=cst.Comma(whitespace_after=_continuation(depth - 1 if last else depth)),
                whitespace_after_arg=cst.SimpleWhitespace(""),
            )
        )
    return call.with_changes(whitespace_before_args=_continuation(depth), args=out)


def one_per_line(call: cst.Call) -> bool:
    """Arguments laid out one per line, with a trailing comma."""
    return bool(call.args) and isinstance(call.args[-1].comma, cst.Comma)


def is_multiline(call: cst.Call) -> bool:
    return "\n" in cst.Module([]).code_for_node(call)


def too_long(node: cst.CSTNode, limit: int = 88) -> bool:
    """A rough check: would this node, rendered on one line after some indentation, be long?"""
    return len(cst.Module([]).code_for_node(node)) + 16 > limit


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... : the first not in `taken` (which it joins)."""
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate


def scalar_tensor(
    values: list[cst.BaseExpression | None],
    tf_name: Callable[[cst.BaseExpression], str | None],
) -> bool:
    """A local bound once, to a loss (`tf.compat.v1.losses.*`) or a whole-tensor
    `reduce_mean`/`reduce_sum`: a scalar, which TPUEstimator cannot concatenate across
    shards (metric_fn and host_call tensors get a batch dimension). A `None` bound too
    (`loss = None` for the modes without one) does not count."""
    values = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
    if len(values) != 1 or not isinstance(values[0], cst.Call):
        return False
    call = values[0]
    name = tf_name(call.func) or ""
    if name.startswith(("losses.", "compat.v1.losses.")):
        # `reduction=Reduction.NONE` keeps one loss per example
        reduction = kwarg(call, "reduction")
        return reduction is None or not cst.Module([]).code_for_node(reduction.value).endswith(
            "NONE"
        )
    if name.split(".")[-1] in ("reduce_mean", "reduce_sum"):
        positional = [a for a in call.args if a.keyword is None]
        return len(positional) < 2 and kwarg(call, "axis") is None
    return False


def name_count(
    node: cst.FunctionDef | cst.Module | cst.BaseExpression, name: str, *, keywords: bool = True
) -> int:
    """How often `name` is spelled as a variable (not as an attribute's name) in a function's
    body, nested defs and lambdas included, or in a module or an expression. `keywords=False`:
    keyword names (`f(params=params)` counts once) are not counted either."""
    count = 0

    class V(cst.CSTVisitor):
        def visit_Arg(self, node: cst.Arg) -> bool:
            if keywords:
                return True
            walk(node.value, self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            walk(node.value, self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            nonlocal count
            count += node.value == name

    walk(node.body if isinstance(node, cst.FunctionDef) else node, V())
    return count


def pure_read(node: cst.BaseExpression) -> bool:
    """A name, an attribute of one, or a literal key of one (`clip_norm`, `hparams.clip_norm`,
    `params["clip_norm"]`): reading it calls nothing of the user's but an attribute or item
    lookup, so two reads with nothing rebinding the name in between give the same value."""
    if isinstance(node, cst.Name):
        return node.value not in ("True", "False", "None")
    if isinstance(node, cst.Attribute):
        return pure_read(node.value)
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        key = node.slice[0].slice
        return (
            isinstance(key, cst.Index)
            and isinstance(key.value, (cst.SimpleString, cst.Integer))
            and pure_read(node.value)
        )
    return False
