"""The public API: migrate source text or whole trees. Returns data; never prints or writes."""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import libcst as cst

from est2tpu import catalogue, suppressions
from est2tpu.cache import Cache, digest, index_digest, restore_result, store_result
from est2tpu.engine import is_selected, may_match, parse, select_rules, transform, verify
from est2tpu.ftypes import FileResult, MigrationError, RuleInfo, Status, Target
from est2tpu.index import USE_NAMES, Indexer, ProjectIndex, SourceModule, module_names
from est2tpu.names import ImportTable
from est2tpu.notebook import Notebook
from est2tpu.rule import FileState, Rule


def all_rules() -> list[RuleInfo]:
    """Every catalogue entry, in ID order."""
    return list(catalogue.load().values())


def get_rule(rule_id: str) -> RuleInfo:
    """One catalogue entry; raises KeyError for an unknown ID."""
    return catalogue.load()[rule_id.upper()]


def migrate_source(
    text: str,
    *,
    target: Target = Target.TPU_ESTIMATOR,
    path: str = "-",
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    use_runtime: bool = True,
) -> FileResult:
    """Migrate one module's source text on its own (the project is that one module)."""
    result = FileResult(Path(path), Status.UNCHANGED, old_text=text, new_text=text)
    if suppressions.skips_file(text):
        result.status = Status.SKIPPED
        return result
    try:
        module = parse(text)
        name = Path(path).stem if path != "-" else "__main__"
        indexer = Indexer([Indexer.source(path, module, [name], text)], use_runtime=use_runtime)
        indexer.register(indexer.modules[path], [name])
        _run(result, module, indexer.build(), target, select, ignore, use_runtime, text)
    except MigrationError as exc:
        _fail(result, str(exc))
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
        _fail(result, f"internal error: {type(exc).__name__}: {exc}")
    return result


@dataclass
class _Candidate:
    result: FileResult
    module: cst.Module | None
    names: list[str]
    notebook: Notebook | None = None
    digest: str = ""  # of the file's bytes, for the cache
    imports: list[tuple[str, str]] | None = None  # import_pairs(); None: could not tell
    extra: list[str] = field(default_factory=list)  # per-file ignores

    @property
    def source(self) -> str:
        """The Python text that was parsed (a notebook's joined cells)."""
        if self.notebook is not None:
            return self.notebook.program
        return self.result.old_text or ""


def migrate_paths(
    paths: Sequence[Path],
    *,
    target: Target = Target.TPU_ESTIMATOR,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    exclude: Sequence[str] = (),
    use_runtime: bool = True,
    per_file_ignores: Callable[[Path], Collection[str]] | None = None,
    cache: Cache | None = None,
    jobs: int | None = None,
) -> Iterator[FileResult]:
    """Migrate every Python file and notebook under `paths` as one project.

    Yields one FileResult per file found, in a stable order: files that failed or were
    skipped (by the pre-filter or a `# est2tpu: skip-file` comment) first as they are met,
    then the parsed ones. A notebook's result holds the notebook's JSON text; its findings'
    paths read `nb.ipynb:cell N` with lines counted inside that cell.
    `per_file_ignores(path)` names rule IDs (or prefixes) switched off for one file.
    `cache` reuses results of unchanged files (see `est2tpu.cache`); `jobs` caps the worker
    processes (default: every core; 1 runs in this process).

    Speed (see the README's performance section): reading and decoding run in worker
    processes; only the modules the project index needs are parsed before it is built; a
    file that no selected rule can touch (judged from its text and an import scan that can
    only over-approximate) and that Python compiles is never parsed by LibCST; the rest are
    parsed and migrated in worker processes.
    """
    from est2tpu.discovery import discover

    found = list(discover(paths, exclude=exclude))
    workers = _workers(jobs)
    global _SHARED
    _SHARED = _Shared(roots=list(paths))
    try:
        tasks = [f for f in found if not isinstance(f, tuple)]
        scans = iter(_map(_scan_one, tasks, workers, min_tasks=64))
        ordered: list[FileResult | _Candidate] = []
        for item in found:
            if isinstance(item, tuple):
                ordered.append(FileResult(item[0], Status.FAILED, error=item[1]))
                continue
            scan = next(scans)
            ordered.append(scan)
        yield from _migrate_scanned(
            ordered,
            paths,
            target,
            select,
            ignore,
            exclude,
            use_runtime,
            per_file_ignores,
            cache,
            workers,
        )
    finally:
        _SHARED = _Shared()


def _migrate_scanned(
    ordered: list[FileResult | _Candidate],
    paths: Sequence[Path],
    target: Target,
    select: Collection[str] | None,
    ignore: Collection[str],
    exclude: Sequence[str],
    use_runtime: bool,
    per_file_ignores: Callable[[Path], Collection[str]] | None,
    cache: Cache | None,
    workers: int,
) -> Iterator[FileResult]:
    shared = _SHARED
    cands = [c for c in ordered if isinstance(c, _Candidate)]
    for cid, cand in enumerate(cands):
        cand.extra = sorted(per_file_ignores(cand.result.path)) if per_file_ignores else []
        if cand.notebook is not None:
            cand.digest = digest(cand.result.old_text or "")
    early: dict[int, bool] = {}  # candidate -> it failed before the index (parse)
    done: set[int] = set()

    inputs_key = digest(
        str(use_runtime),
        *(f"{c.result.path}\0{' '.join(c.names)}\0{c.digest}" for c in cands),
    )
    facts = cache.index_for(inputs_key) if cache is not None else None

    def from_cache(facts: str) -> None:
        assert cache is not None
        for cid, cand in enumerate(cands):
            if cid in done:
                continue
            key = Cache.file_key(cand.result.path, cand.digest, facts, cand.extra)
            hit = cache.get(key, cand.result)
            if hit is not None:
                early[cid] = hit
                done.add(cid)

    if facts is not None:
        from_cache(facts)
    if len(done) < len(cands):
        shared.cands = cands
        shared.settings = (target, select, tuple(ignore), use_runtime)
        try:
            index = _build_lazy_index(shared, use_runtime)
        except MigrationError:
            # The reference pipeline reports an index failure on every parsed file.
            yield from _migrate_all_parsed(
                paths,
                target=target,
                select=select,
                ignore=ignore,
                exclude=exclude,
                use_runtime=use_runtime,
                per_file_ignores=per_file_ignores,
            )
            return
        shared.index = index
        new_facts = None
        if cache is not None:
            new_facts = index_digest(index)
            cache.put_index(inputs_key, new_facts)
            if new_facts != facts:
                from_cache(new_facts)
        pending = [cid for cid in range(len(cands)) if cid not in done]
        for cid, entry in _map(_finish_one, pending, workers, min_tasks=8):
            cand = cands[cid]
            hit = entry.get("early")
            restore_result(entry, cand.result)
            early[cid] = bool(hit)
            if cache is not None and new_facts is not None:
                key = Cache.file_key(cand.result.path, cand.digest, new_facts, cand.extra)
                cache.put(key, cand.result, bool(hit))
    if cache is not None:
        cache.save()

    # The reference order: failures and skips as they are met, then the parsed files.
    cid_of = {id(c): i for i, c in enumerate(cands)}
    for item in ordered:
        if isinstance(item, FileResult):
            yield item
        elif early[cid_of[id(item)]]:
            yield item.result
    for cid, cand in enumerate(cands):
        if not early[cid]:
            yield cand.result


@dataclass
class _Shared:
    """What worker processes inherit when they are forked (never pickled)."""

    roots: list[Path] = field(default_factory=list)
    cands: list[_Candidate] = field(default_factory=list)
    settings: tuple[Target, Collection[str] | None, tuple[str, ...], bool] | None = None
    index: ProjectIndex | None = None
    modules: dict[int, cst.Module] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)  # candidate -> parse error


_SHARED = _Shared()

T = TypeVar("T")
R = TypeVar("R")


def _workers(jobs: int | None) -> int:
    if jobs is not None:
        return max(1, jobs)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _map(fn: Callable[[T], R], items: Sequence[T], workers: int, *, min_tasks: int) -> list[R]:
    """`fn` over `items` in order; in forked worker processes when it pays.

    Workers are forked, so they see this process's state (the parsed modules, the index)
    without pickling a tree; only file results travel back. Without `fork`, or for few
    items, everything runs here.
    """
    if workers <= 1 or len(items) < min_tasks or "fork" not in mp.get_all_start_methods():
        return [fn(x) for x in items]
    n = min(workers, len(items))
    chunk = max(1, min(32, len(items) // (n * 8)))
    try:
        with mp.get_context("fork").Pool(n) as pool:
            return pool.map(fn, items, chunksize=chunk)
    except (OSError, mp.ProcessError, EOFError):
        return [fn(x) for x in items]


def _scan_one(path: Path) -> FileResult | _Candidate:
    """Read, pre-filter and decode one file (in a worker): a result, or a candidate."""
    from est2tpu import notebook
    from est2tpu.textio import decode

    result = FileResult(path, Status.UNCHANGED)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return _fail(result, f"cannot read: {exc.strerror or exc}")
    if not may_match(data):
        result.status = Status.SKIPPED
        return result
    if path.suffix == ".ipynb":
        try:
            nb = notebook.load(data)
            result.old_text = result.new_text = nb.raw
            if not nb.python or suppressions.skips_file(nb.head):
                result.status = Status.SKIPPED
                return result
        except MigrationError as exc:
            return _fail(result, str(exc))
        return _Candidate(result, None, [path.stem], nb)
    try:
        decoded = decode(data)
    except MigrationError as exc:
        return _fail(result, str(exc))
    result.old_text = result.new_text = decoded.text
    result.encoding, result.bom, result.newline = decoded.encoding, decoded.bom, decoded.newline
    if suppressions.skips_file(decoded.text):
        result.status = Status.SKIPPED
        return result
    root = _root_for(path, _SHARED.roots)
    cand = _Candidate(result, None, module_names(path, root))
    cand.digest = digest(data)
    cand.imports = import_pairs(decoded.text)
    return cand


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
    ) -> None:
        super().__init__([], use_runtime=use_runtime)
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

    indexer = _LazyIndexer(claims, load, use_runtime)
    for cid, cand in enumerate(cands):
        if (
            cand.notebook is not None
            or cand.imports is None
            or _Superset(cand.imports).may_use(cand.source, *USE_NAMES)
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
    shared = _SHARED
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


_FROM_IMPORT = re.compile(r"\bfrom\s+([\w.]+)\s+import\s*(\([^)]*\)?|[^\n;]*)")
_PLAIN_IMPORT = re.compile(r"(?<![\w.])import\s+([^\n;]*)")
_COMMENT = re.compile(r"#[^\n]*")


def import_pairs(text: str) -> list[tuple[str, str]] | None:
    """(bound name, imported module) for every TensorFlow import a regex can see.

    A superset of what `ImportTable.from_module` binds to a `tensorflow*` module: it also
    sees imports inside strings and comments, and keeps names bound twice, which only ever
    adds spellings. Relative imports and `*` bind nothing there, nor here. None when a
    parenthesised import list holds a comment or does not close (the scan cannot tell).
    """
    if "tensorflow" not in text:
        return []
    if "\\" in text:
        text = re.sub(r"\\\r?\n", " ", text)
    pairs: list[tuple[str, str]] = []
    for match in _FROM_IMPORT.finditer(text):
        module = match.group(1)
        if not module.startswith("tensorflow"):
            continue
        names = match.group(2)
        if names.startswith("(") and ("#" in names or not names.endswith(")")):
            return None
        names = _COMMENT.sub(" ", names).strip("() \t\r\n")
        for part in names.replace("\n", " ").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            bound = words[2] if len(words) >= 3 and words[1] == "as" else words[0]
            pairs.append((bound, f"{module}.{words[0]}"))
    for match in _PLAIN_IMPORT.finditer(text):
        for part in _COMMENT.sub(" ", match.group(1)).split(","):
            words = part.split()
            if not words or not words[0].startswith("tensorflow"):
                continue
            if len(words) >= 3 and words[1] == "as":
                pairs.append((words[2], words[0]))
            else:
                top = words[0].split(".")[0]
                pairs.append((top, top))
    return pairs


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
    from est2tpu.textio import decode

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
        if path.suffix == ".ipynb":
            if not may_match(data):
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
        if not may_match(data):
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
        index = _build_index(candidates, use_runtime)
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


def _build_index(candidates: Sequence[_Candidate], use_runtime: bool) -> ProjectIndex:
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
    indexer = Indexer([src for src, _ in pairs], use_runtime=use_runtime)
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


def _root_for(path: Path, roots: Sequence[Path]) -> Path | None:
    for root in roots:
        if root.is_dir():
            try:
                path.relative_to(root)
            except ValueError:
                continue
            return root
    return path.parent


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


def _fail(result: FileResult, reason: str) -> FileResult:
    result.status = Status.FAILED
    result.error = reason
    result.new_text = result.old_text
    result.findings = []
    return result
