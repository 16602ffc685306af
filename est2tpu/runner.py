"""The LibCST-free half of a run: its types, reading and pre-filtering files, the worker pool,
and the one per-file error boundary.

`est2tpu.api` drives a run with it; `est2tpu.pipeline` (the parsing half, loaded only when a
file has to be parsed) receives a `RunState` from it and never reaches back into the API.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from est2tpu import suppressions
from est2tpu.cache import digest, stamp_of
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.scan import dotted_names, import_pairs, may_match

if TYPE_CHECKING:
    import libcst as cst

    from est2tpu.index import ProjectIndex
    from est2tpu.inert import Split
    from est2tpu.notebook import Notebook

#: `progress(stage, done, total)`: a run's stages are "scanning", "indexing", "rewriting".
ProgressFn = Callable[[str, int, int], None]


@dataclass
class Candidate:
    """A file that passed the pre-filter and may have to be parsed."""

    result: FileResult
    module: cst.Module | None
    names: list[str]  # the dotted module names it can be imported as
    notebook: Notebook | None = None
    digest: str = ""  # of the file's bytes, for the cache ("" in a run without one)
    imports: list[tuple[str, str]] | None = None  # import_pairs(); None: could not tell
    extra: list[str] = field(default_factory=list)  # per-file ignores
    imports_scanned: bool = False

    def import_scan(self) -> list[tuple[str, str]] | None:
        """`imports`, scanned on first use: a run the cache answers never needs them."""
        if not self.imports_scanned:
            self.imports = import_pairs(self.source) if self.notebook is None else None
            self.imports_scanned = True
        return self.imports

    @property
    def source(self) -> str:
        """The Python text that was parsed (a notebook's joined cells)."""
        if self.notebook is not None:
            return self.notebook.program
        return self.result.old_text or ""


@dataclass(frozen=True)
class Settings:
    """What the user asked every file of a run to be migrated with."""

    target: Target
    select: Collection[str] | None
    ignore: tuple[str, ...]
    use_runtime: bool


@dataclass
class RunState:
    """One run's state. Worker processes inherit it when forked (see `pmap`); never pickled."""

    roots: list[Path]
    settings: Settings
    cands: list[Candidate] = field(default_factory=list)
    index: ProjectIndex | None = None
    modules: dict[int, cst.Module] = field(default_factory=dict)  # candidate -> parsed tree
    failed: dict[int, str] = field(default_factory=dict)  # candidate -> parse error
    # candidate -> its text with the inert defs set aside (None: the whole text is parsed)
    splits: dict[int, Split | None] = field(default_factory=dict)
    mentions: Counter[str] | None = None  # identifier -> how many candidates mention it
    skipped: list[Path] = field(default_factory=list)  # files the pre-filter skipped
    # Scan imports while reading (in the scanning workers) rather than when first needed.
    scan_imports: bool = False
    # Digests of notebooks whose cells are known to parse (from the results cache): their
    # cells are not parsed again while scanning (see `notebook.load`).
    parsed_notebooks: Collection[str] = ()
    # Files that passed the pre-filter in a run before (from the results cache): path ->
    # (stat stamp, digest of the bytes). See `_read`.
    passed: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # Hash each candidate's bytes (`Candidate.digest`): only a run with a cache uses them.
    digests: bool = True
    # folder -> its path below the root its files' module names count from, this run
    folder_parts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dir_roots: list[Path] | None = None  # the roots that are directories, once asked


def fail(result: FileResult, reason: str) -> FileResult:
    """Mark a file failed: left exactly as it was, with a one-line reason."""
    result.status = Status.FAILED
    result.error = reason
    result.new_text = result.old_text
    result.findings = []
    return result


def guarded(result: FileResult, work: Callable[[], object]) -> FileResult:
    """The per-file error boundary: run `work` on `result`; any error fails that file only.

    A MigrationError carries its one-line reason; any other exception is a bug in est2tpu,
    reported as an internal error on this file while the run goes on.
    """
    try:
        work()
    except MigrationError as exc:
        fail(result, str(exc))
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
        fail(result, f"internal error: {type(exc).__name__}: {exc}")
    return result


def workers(jobs: int | None) -> int:
    """How many worker processes a run uses: `jobs`, else every core this process may use."""
    if jobs is not None:
        return max(1, jobs)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

# The function and state forked workers call with (set only while a pool runs).
_FORKED: tuple[Callable[[Any, Any], Any], Any] | None = None


def _call_forked_on(at: int) -> object:
    assert _FORKED is not None and _ITEMS is not None
    fn, state = _FORKED
    return fn(state, _ITEMS[at])


def _call_forked_at(at: int) -> tuple[int, object]:
    assert _FORKED is not None and _ITEMS is not None
    fn, state = _FORKED
    return at, fn(state, _ITEMS[at])


# The items of the pool running (`pmap`): forked with them, the workers get their indices
# only (a path sent to a worker is rebuilt there from its parts).
_ITEMS: Sequence[Any] | None = None


def forks(jobs: int, items: int, min_tasks: int) -> bool:
    """Whether `pmap` over `items` items runs them in forked workers (unless forking fails)."""
    if jobs <= 1 or items < min_tasks:
        return False
    import multiprocessing as mp  # here: a warm run forks nothing

    return "fork" in mp.get_all_start_methods()


def pmap(
    fn: Callable[[S, T], R],
    state: S,
    items: Sequence[T],
    jobs: int,
    *,
    min_tasks: int,
    on_done: Callable[[int], None] | None = None,
    cost: Callable[[T], int] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[R]:
    """`fn(state, item)` over `items`, in order; in forked worker processes when it pays.

    Workers are forked, so they see `state` (the parsed modules, the index) without pickling
    a tree; only the items and the results travel. Without `fork`, or for few items,
    everything runs here. `on_done(n)` is told how many items are done as they finish.
    With `cost` (a guess of each item's work), the workers take the dearest items first,
    a few at a time, so that no worker is left with a run of big files at the end while
    the others idle; the results still come back in the order of `items`. `meanwhile`
    is called here once the workers have their first items (only when there are workers):
    work of this process's own that then runs beside theirs.
    """
    global _FORKED, _ITEMS
    if not forks(jobs, len(items), min_tasks):
        return _sequential(fn, state, items, on_done)
    import multiprocessing as mp

    n = min(jobs, len(items))
    _FORKED, _ITEMS = (fn, state), items
    try:
        if cost is not None:
            return _by_cost(items, n, cost, on_done, meanwhile)
        return _in_order(items, n, on_done, meanwhile)
    except (OSError, mp.ProcessError, EOFError):
        return _sequential(fn, state, items, on_done)
    finally:
        _FORKED = _ITEMS = None


def _pool(n: int) -> Any:
    # A stop signal that lands while the pool is being built would leave it half-built
    # and never terminated (the run then hangs at exit): hold them until it is whole.
    import multiprocessing as mp

    held = {signal.SIGINT, signal.SIGTERM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        return mp.get_context("fork").Pool(n, _worker_init, (os.getpid(), mask))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _in_order(
    items: Sequence[T],
    n: int,
    on_done: Callable[[int], None] | None,
    meanwhile: Callable[[], object] | None = None,
) -> list[Any]:
    """The pool over `items` as they come, results in their order (see `pmap`)."""
    chunk = max(1, min(32, len(items) // (n * 8)))
    out: list[Any] = []
    with _pool(n) as pool:
        results = pool.imap(_call_forked_on, range(len(items)), chunksize=chunk)
        if meanwhile is not None:
            meanwhile()
        for result in results:
            out.append(result)
            if on_done is not None:
                on_done(len(out))
    return out


def _by_cost(
    items: Sequence[T],
    n: int,
    cost: Callable[[T], int],
    on_done: Callable[[int], None] | None,
    meanwhile: Callable[[], object] | None = None,
) -> list[Any]:
    """The pool over `items`, dearest first (see `pmap`), results in the items' order."""
    order = sorted(range(len(items)), key=lambda i: -cost(items[i]))
    # Small chunks: the dear items are few and come first; the cheap tail evens out.
    chunk = max(1, min(8, len(items) // (n * 32)))
    out: list[Any] = [None] * len(items)
    with _pool(n) as pool:
        results = pool.imap_unordered(_call_forked_at, order, chunksize=chunk)
        if meanwhile is not None:
            meanwhile()
        for done, (at, result) in enumerate(results, 1):
            out[at] = result
            if on_done is not None:
                on_done(done)
    return out


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


def _sequential(
    fn: Callable[[S, T], R], state: S, items: Sequence[T], on_done: Callable[[int], None] | None
) -> list[R]:
    out: list[R] = []
    for item in items:
        out.append(fn(state, item))
        if on_done is not None:
            on_done(len(out))
    return out


def scan_one(state: RunState, path: Path) -> FileResult | Candidate:
    """Read, pre-filter and decode one file (in a worker): a finished result, or a candidate."""
    result = FileResult(path, Status.UNCHANGED)
    found: list[Candidate] = []
    guarded(result, lambda: found.extend(_scan(state, path, result)))
    return found[0] if found else result


def scan_sent(state: RunState, path: Path) -> FileResult | Candidate | None:
    """`scan_one` as a worker sends it back: None for a file the byte pre-filter skipped
    (most files of a big tree), which the parent rebuilds with `scan_received`."""
    scan = scan_one(state, path)
    return None if scan == FileResult(path, Status.SKIPPED) else scan


def scan_received(path: Path, scan: FileResult | Candidate | None) -> FileResult | Candidate:
    """What `scan_sent` sent for `path`, as `scan_one` gave it."""
    return FileResult(path, Status.SKIPPED) if scan is None else scan


def _scan(state: RunState, path: Path, result: FileResult) -> list[Candidate]:
    from est2tpu.textio import check_wide, decode

    data, known = _read(path, state.passed.get(str(path)))
    check_wide(data)
    if known is None and not may_match(data, state.settings.target):
        result.status = Status.SKIPPED
        return []
    if path.suffix == ".ipynb":
        from est2tpu import notebook  # here: most runs read no notebook

        known = known or digest(data)
        nb = notebook.load(data, check_cells=known not in state.parsed_notebooks)
        result.old_text = result.new_text = nb.raw
        if not nb.python or suppressions.skips_file(nb.head):
            result.status = Status.SKIPPED
            return []
        return [Candidate(result, None, [path.stem], nb, digest=known)]
    decoded = decode(data)
    result.old_text = result.new_text = decoded.text
    result.encoding, result.bom, result.newline = decoded.encoding, decoded.bom, decoded.newline
    if known is None and suppressions.skips_file(decoded.text):
        result.status = Status.SKIPPED
        return []
    cand = Candidate(result, None, _module_names(path, state))
    cand.digest = known or (digest(data) if state.digests else "")
    if state.scan_imports:
        cand.import_scan()
    return [cand]


def _read(path: Path, passed: tuple[str, str] | None) -> tuple[bytes, str | None]:
    """A file's bytes, and the digest of them when a run before found that they pass the
    pre-filter (`passed`: its stamp then, and the digest): the open file's stamp, taken
    after reading, is that stamp. A file written since has another ctime (or inode), and
    one written while it was read has a stamp too recent to trust (`cache.RACY_SECONDS`);
    either way its bytes are scanned and hashed again."""
    try:
        with open(path, "rb") as f:
            data = f.read()
            stamp = stamp_of(os.fstat(f.fileno())) if passed is not None else None
    except OSError as exc:
        raise MigrationError(f"cannot read: {exc.strerror or exc}") from None
    if passed is None or stamp is None or stamp != passed[0]:
        return data, None
    return data, passed[1]


def _module_names(path: Path, state: RunState) -> list[str]:
    """`scan.module_names(path, root)`, where `root` is the first of the run's roots that is
    a directory holding the file (its folder when none is), its folder's part asked once per
    folder: a file is below a root exactly when its folder is (a root is a directory, never
    the file itself), and its path below the root is its folder's and its stem."""
    folder = path.parent
    key = str(folder)
    parts = state.folder_parts.get(key)
    if parts is None:
        if state.dir_roots is None:
            state.dir_roots = [root for root in state.roots if root.is_dir()]
        parts = ()
        for root in state.dir_roots:
            try:
                parts = folder.relative_to(root).parts
            except ValueError:
                continue
            break
        state.folder_parts[key] = parts
    return dotted_names([*parts, path.stem])
