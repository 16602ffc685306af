"""The parsing half of a run: the project index, rules and verification (LibCST).

`est2tpu.api` imports this module only when some file has to be parsed, so a run that the
cache answers completely (a warm pre-commit hook or CI check) never loads LibCST.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

import libcst as cst

from est2tpu import api, suppressions
from est2tpu.api import _Candidate, _fail, _root_for, _Shared
from est2tpu.cache import store_result
from est2tpu.engine import is_selected, parse, select_rules, transform, verify
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.index import USE_NAMES, Indexer, ProjectIndex, SourceModule
from est2tpu.names import ImportTable
from est2tpu.notebook import Notebook
from est2tpu.rule import FileState, Rule
from est2tpu.scan import may_match, module_names


def migrate_source(
    text: str,
    target: Target,
    path: str,
    select: Collection[str] | None,
    ignore: Collection[str],
    use_runtime: bool,
) -> FileResult:
    """`api.migrate_source`: one module's text on its own (the project is that module)."""
    result = FileResult(Path(path), Status.UNCHANGED, old_text=text, new_text=text)
    if suppressions.skips_file(text):
        result.status = Status.SKIPPED
        return result
    try:
        module = parse(text)
        name = Path(path).stem if path != "-" else "__main__"
        indexer = Indexer(
            [Indexer.source(path, module, [name], text)],
            use_runtime=use_runtime,
            follow_helpers=target is Target.TF2,
        )
        indexer.register(indexer.modules[path], [name])
        _run(result, module, indexer.build(), target, select, ignore, use_runtime, text)
    except MigrationError as exc:
        _fail(result, str(exc))
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
        _fail(result, f"internal error: {type(exc).__name__}: {exc}")
    return result


class _LazyIndexer(Indexer):
    """An Indexer that parses a module another one refers to only when it is looked up.

    Only modules that may use an Estimator API are collected (the reference Indexer's
    collector skips every other module); a name resolves, as there, to the one module that
    claims it and parsed, and to nothing when two do.
    """

    def __init__(
        self,
        claims: dict[str, list[int]],
        load: Callable[[int], SourceModule | None],
        use_runtime: bool,
        follow_helpers: bool,
    ) -> None:
        super().__init__([], use_runtime=use_runtime, follow_helpers=follow_helpers)
        self.claims = claims
        self.load = load

    def module_for(self, dotted_name: str) -> SourceModule | None:
        found: dict[str, SourceModule] = {}
        for cid in self.claims.get(dotted_name, ()):
            src = self.load(cid)
            if src is not None:
                found[src.path] = src
        return next(iter(found.values())) if len(found) == 1 else None


def _build_lazy_index(shared: _Shared, use_runtime: bool) -> ProjectIndex:
    """Parse what the index needs (here, before forking) and build it."""
    cands = shared.cands
    sources: dict[int, SourceModule | None] = {}
    claims: dict[str, list[int]] = {}
    for cid, cand in enumerate(cands):
        for name in cand.names:
            claims.setdefault(name, []).append(cid)

    def load(cid: int) -> SourceModule | None:
        if cid in sources:
            return sources[cid]
        cand = cands[cid]
        sources[cid] = None
        try:
            module = parse(cand.source)
        except MigrationError as exc:
            shared.failed[cid] = str(exc)
            return None
        shared.modules[cid] = module
        try:
            src = Indexer.source(str(cand.result.path), module, cand.names, cand.source)
        except Exception:  # noqa: BLE001 - a file the indexer cannot read adds no roles
            return None
        sources[cid] = src
        indexer.modules[src.path] = src
        return src

    assert shared.settings is not None
    indexer = _LazyIndexer(claims, load, use_runtime, shared.settings[0] is Target.TF2)
    for cid, cand in enumerate(cands):
        if (
            cand.notebook is not None
            or cand.imports is None
            or _Superset(cand.imports).uses(cand.source, *USE_NAMES)
        ):
            load(cid)
    try:
        return indexer.build()
    except Exception as exc:  # noqa: BLE001 - reported on every file, the run goes on
        raise MigrationError(
            f"internal error: the project index failed: {type(exc).__name__}: {exc}"
        ) from None


def _finish_one(cid: int) -> tuple[int, dict[str, object]]:
    """Migrate one candidate against the built index (in a worker): its stored result."""
    shared = api._SHARED
    cand = shared.cands[cid]
    assert shared.settings is not None and shared.index is not None
    target, select, ignore, use_runtime = shared.settings
    result = cand.result
    if cid in shared.failed:
        return cid, store_result(_fail(result, shared.failed[cid]), True)
    ignores = [*ignore, *cand.extra]
    module = shared.modules.get(cid)
    if module is None:
        if _inert(cand, select_rules(target, select, ignores), shared.index, target, use_runtime):
            return cid, store_result(result, False)
        try:
            module = parse(cand.source)
        except MigrationError as exc:
            return cid, store_result(_fail(result, str(exc)), True)
    try:
        _run(result, module, shared.index, target, select, ignores, use_runtime, cand.source)
        if cand.notebook is not None:
            _back_to_notebook(result, cand.notebook)
    except MigrationError as exc:
        _fail(result, str(exc))
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
        _fail(result, f"internal error: {type(exc).__name__}: {exc}")
    return cid, store_result(result, False)


# A suppression comment can make a finding (E2T001) in a file no rule touches.
_SUPPRESSION_HINT = re.compile(r"est2tpu", re.IGNORECASE)


def _inert(
    cand: _Candidate,
    rules: Sequence[type[Rule]],
    index: ProjectIndex,
    target: Target,
    use_runtime: bool,
) -> bool:
    """True when migrating the file cannot change or report anything, without parsing it.

    Every selected rule's `applies` says no, asked with an import table that can only
    over-approximate the real one; no suppression comment; and Python compiles the file
    (so a file LibCST would reject is still parsed and reported as before). A file whose
    last line has no newline is parsed too (LibCST may not give such a line back).
    """
    text = cand.source
    if cand.notebook is not None or cand.imports is None:
        return False
    if text and not text.endswith("\n"):
        return False
    if _SUPPRESSION_HINT.search(text):
        return False
    state = FileState(
        str(cand.result.path), index, target, _Superset(cand.imports), text, use_runtime=use_runtime
    )
    try:
        if any(rule.applies(state) for rule in rules):
            return False
    except Exception:  # noqa: BLE001 - a rule that cannot answer here is simply run
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, str(cand.result.path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


class _Superset(ImportTable):
    """Every (name, module) pair an import scan found, none judged ambiguous: an import
    table whose spellings include every spelling of the real one."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        super().__init__(dict(pairs))
        self.pairs = pairs

    def spellings(self, canonical: str) -> list[str]:
        out: list[str] = []
        for name, target in self.pairs:
            out += ImportTable({name: target}).spellings(canonical)
        return out


def _migrate_all_parsed(
    paths: Sequence[Path],
    *,
    target: Target = Target.TPU_ESTIMATOR,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    exclude: Sequence[str] = (),
    use_runtime: bool = True,
    per_file_ignores: Callable[[Path], Collection[str]] | None = None,
) -> Iterator[FileResult]:
    """The reference pipeline: parse every file that passes the byte pre-filter.

    `migrate_paths` gives the same results faster; it falls back to this one when the
    project index cannot be built, and the tests hold the two to each other.

    Yields one FileResult per file found, in a stable order: files that failed or were
    skipped (by the pre-filter or a `# est2tpu: skip-file` comment) first as they are met,
    then the parsed ones. A notebook's result holds the notebook's JSON text; its findings'
    paths read `nb.ipynb:cell N` with lines counted inside that cell.
    `per_file_ignores(path)` names rule IDs (or prefixes) switched off for one file.
    """
    from est2tpu import notebook
    from est2tpu.discovery import discover
    from est2tpu.textio import check_wide, decode

    candidates: list[_Candidate] = []
    for found in discover(paths, exclude=exclude):
        if isinstance(found, tuple):
            yield FileResult(found[0], Status.FAILED, error=found[1])
            continue
        path = found
        result = FileResult(path, Status.UNCHANGED)
        try:
            data = path.read_bytes()
        except OSError as exc:
            yield _fail(result, f"cannot read: {exc.strerror or exc}")
            continue
        try:
            check_wide(data)
        except MigrationError as exc:
            yield _fail(result, str(exc))
            continue
        if path.suffix == ".ipynb":
            if not may_match(data, target):
                result.status = Status.SKIPPED
                yield result
                continue
            try:
                nb = notebook.load(data)
                result.old_text = result.new_text = nb.raw
                if not nb.python or suppressions.skips_file(nb.head):
                    result.status = Status.SKIPPED
                    yield result
                    continue
                module = parse(nb.program)
            except MigrationError as exc:
                yield _fail(result, str(exc))
                continue
            candidates.append(_Candidate(result, module, [path.stem], nb))
            continue
        if not may_match(data, target):
            result.status = Status.SKIPPED
            yield result
            continue
        try:
            decoded = decode(data)
            result.old_text = result.new_text = decoded.text
            result.encoding, result.bom, result.newline = (
                decoded.encoding,
                decoded.bom,
                decoded.newline,
            )
            if suppressions.skips_file(decoded.text):
                result.status = Status.SKIPPED
                yield result
                continue
            module = parse(decoded.text)
        except MigrationError as exc:
            yield _fail(result, str(exc))
            continue
        root = _root_for(path, paths)
        candidates.append(_Candidate(result, module, module_names(path, root)))

    try:
        index = _build_index(candidates, use_runtime, target)
    except MigrationError as exc:
        for cand in candidates:
            yield _fail(cand.result, str(exc))
        return
    for cand in candidates:
        extra = list(per_file_ignores(cand.result.path)) if per_file_ignores else []
        try:
            assert cand.module is not None
            _run(
                cand.result,
                cand.module,
                index,
                target,
                select,
                [*ignore, *extra],
                use_runtime,
                cand.source,
            )
            if cand.notebook is not None:
                _back_to_notebook(cand.result, cand.notebook)
        except MigrationError as exc:
            _fail(cand.result, str(exc))
        except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
            _fail(cand.result, f"internal error: {type(exc).__name__}: {exc}")
        yield cand.result


def _build_index(
    candidates: Sequence[_Candidate], use_runtime: bool, target: Target
) -> ProjectIndex:
    """The project index; a file the indexer cannot read adds no roles (and shifts nothing).

    If building the index itself fails, MigrationError: every file then fails with that
    reason, untouched, rather than migrating with roles missing.
    """
    pairs = []
    for cand in candidates:
        assert cand.module is not None
        try:
            src = Indexer.source(str(cand.result.path), cand.module, cand.names, cand.source)
        except Exception:  # noqa: BLE001, S112 - a file the indexer cannot read adds no roles
            continue
        pairs.append((src, cand))
    indexer = Indexer(
        [src for src, _ in pairs], use_runtime=use_runtime, follow_helpers=target is Target.TF2
    )
    try:
        for src, cand in pairs:
            indexer.register(src, cand.names)
        return indexer.build()
    except Exception as exc:  # noqa: BLE001 - reported on every file, the run goes on
        raise MigrationError(
            f"internal error: the project index failed: {type(exc).__name__}: {exc}"
        ) from None


def _back_to_notebook(result: FileResult, nb: Notebook) -> None:
    """Turn a result over the joined cells back into one over the notebook's JSON."""
    result.new_text = nb.render(result.new_text or nb.program)
    result.status = Status.CHANGED if result.new_text != nb.raw else Status.UNCHANGED
    result.findings = nb.locate_findings(result.findings, str(result.path))
    result.edits = nb.locate_edits(result.edits)


def _run(
    result: FileResult,
    module: cst.Module,
    index: ProjectIndex,
    target: Target,
    select: Collection[str] | None,
    ignore: Collection[str],
    use_runtime: bool,
    source: str,
) -> None:
    path = str(result.path)
    rules = select_rules(target, select, ignore)
    new_text, state = transform(
        module,
        path=path,
        index=index,
        target=target,
        rules=rules,
        use_runtime=use_runtime,
        original_text=source,
    )
    if new_text != source:
        verify(new_text, path)
        result.status = Status.CHANGED
    result.new_text = new_text
    ran = [cls.ID for cls in rules]

    def enabled(rule_id: str) -> bool:
        if rule_id == suppressions.UNUSED_ID:
            return is_selected(rule_id, select, ignore)
        return any(r.startswith(rule_id) for r in ran)

    # The engine reports everything; suppression comments are honoured here.
    findings = suppressions.apply(
        set(state.findings), suppressions.find(source), enabled=enabled, path=path
    )
    result.findings = sorted(findings, key=lambda f: (f.position, f.rule_id))
    result.edits = state.edits
