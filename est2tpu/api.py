"""The public API: migrate source text or whole trees. Returns data; never prints or writes."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from est2tpu import catalogue, suppressions
from est2tpu.cache import Cache, digest, index_digest, restore_result
from est2tpu.ftypes import FileResult, MigrationError, RuleInfo, Status, Target
from est2tpu.scan import import_pairs, may_match, module_names

if TYPE_CHECKING:
    import libcst as cst

    from est2tpu.index import ProjectIndex
    from est2tpu.notebook import Notebook

# LibCST, the index and the rules load only when a file has to be parsed (`pipeline`).


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
    from est2tpu import pipeline

    return pipeline.migrate_source(text, target, path, select, ignore, use_runtime)


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
    processes for very large trees; LibCST is not even imported when the cache answers
    for every file; only the modules the project index needs are parsed before it is built; a
    file that no selected rule can touch (judged from its text and an import scan that can
    only over-approximate) and that Python compiles is never parsed by LibCST; the rest are
    parsed and migrated in worker processes.
    """
    from est2tpu.discovery import discover

    found = list(discover(paths, exclude=exclude))
    workers = _workers(jobs)
    global _SHARED
    _SHARED = _Shared(roots=list(paths), target=target)
    try:
        tasks = [f for f in found if not isinstance(f, tuple)]
        # Scanning is cheap (1,963 TF files: 0.3 s here); forking and sending texts back
        # cost more than they save below a few thousand files.
        scans = iter(_map(_scan_one, tasks, workers, min_tasks=4096))
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
        from est2tpu import pipeline

        shared.cands = cands
        shared.settings = (target, select, tuple(ignore), use_runtime)
        try:
            index = pipeline._build_lazy_index(shared, use_runtime)
        except MigrationError:
            # The reference pipeline reports an index failure on every parsed file.
            yield from pipeline._migrate_all_parsed(
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
        for cid, entry in _map(pipeline._finish_one, pending, workers, min_tasks=8):
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
    target: Target | None = None  # for the pre-filter
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
        # A stop signal that lands while the pool is being built would leave it half-built
        # and never terminated (the run then hangs at exit): hold them until it is whole.
        held = {signal.SIGINT, signal.SIGTERM}
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            pool = mp.get_context("fork").Pool(n, _worker_init, (os.getpid(), mask))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        with pool:
            return pool.map(fn, items, chunksize=chunk)
    except (OSError, mp.ProcessError, EOFError):
        return [fn(x) for x in items]


def _worker_init(parent: int, mask: set[signal.Signals]) -> None:
    """Signals in a pool worker: the parent alone stops a run, and a worker dies with it.

    Ctrl-C reaches the whole process group and the parent stops the pool; the SIGTERM of
    `Pool.terminate` must end a worker quietly (the handler inherited from the CLI would
    print a traceback); and a worker whose parent was killed would finish its chunk and
    print a BrokenPipeError traceback when it sends the result to nobody.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # forked while the parent held them
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def _scan_one(path: Path) -> FileResult | _Candidate:
    """Read, pre-filter and decode one file (in a worker): a result, or a candidate."""
    from est2tpu import notebook
    from est2tpu.textio import check_wide, decode

    result = FileResult(path, Status.UNCHANGED)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return _fail(result, f"cannot read: {exc.strerror or exc}")
    try:
        check_wide(data)
    except MigrationError as exc:
        return _fail(result, str(exc))
    if not may_match(data, _SHARED.target):
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


def _root_for(path: Path, roots: Sequence[Path]) -> Path | None:
    for root in roots:
        if root.is_dir():
            try:
                path.relative_to(root)
            except ValueError:
                continue
            return root
    return path.parent


def _fail(result: FileResult, reason: str) -> FileResult:
    result.status = Status.FAILED
    result.error = reason
    result.new_text = result.old_text
    result.findings = []
    return result
