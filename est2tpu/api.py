"""The public API: migrate source text or whole trees. Returns data; never prints or writes."""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from est2tpu import catalogue, runner
from est2tpu.cache import Cache, digest, index_digest, restore_result, stat_stamp
from est2tpu.ftypes import FileResult, MigrationError, RuleInfo, Status, Target
from est2tpu.lintconfig import configured_line_length
from est2tpu.runner import Candidate, ProgressFn, RunState, Settings

if TYPE_CHECKING:
    from est2tpu.discovery import IgnorePattern

# A run forks workers to migrate the files when it has at least this many.
_FINISH_MIN_TASKS = 8

# LibCST, the index and the rules load only when a file has to be parsed (`pipeline`).


def all_rules() -> list[RuleInfo]:
    """Every catalogue entry, in ID order."""
    return list(catalogue.load().values())


def get_rule(rule_id: str) -> RuleInfo:
    """One catalogue entry (a rule's, or a `verify --tpu` finding's); KeyError when unknown."""
    entries = catalogue.load()
    if rule_id.upper() not in entries:
        from est2tpu.tpucheck import catalogue as checks

        return checks.load()[rule_id.upper()]
    return entries[rule_id.upper()]


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


def migrate_notebook(
    data: bytes,
    *,
    target: Target = Target.TPU_ESTIMATOR,
    path: str = "-",
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    use_runtime: bool = True,
) -> FileResult:
    """Migrate one notebook's JSON (its bytes) on its own; the result's texts are the JSON.
    Its findings' paths read `PATH:cell N`, with lines counted inside that cell."""
    from est2tpu import pipeline

    return pipeline.migrate_notebook(data, target, path, select, ignore, use_runtime)


def migrate_paths(
    paths: Sequence[Path],
    *,
    target: Target = Target.TPU_ESTIMATOR,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    exclude: Sequence[str | IgnorePattern] = (),
    use_runtime: bool = True,
    per_file_ignores: Callable[[Path], Collection[str]] | None = None,
    cache: Cache | None = None,
    jobs: int | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[FileResult]:
    """Migrate every Python file and notebook under `paths` as one project.

    Yields one FileResult per file found, in a stable order: files that failed or were
    skipped (by the pre-filter or a `# est2tpu: skip-file` comment) first as they are met,
    then the parsed ones. A notebook's result holds the notebook's JSON text; its findings'
    paths read `nb.ipynb:cell N` with lines counted inside that cell.
    `exclude` holds gitignore lines (matched from each path and from the working directory)
    or `IgnorePattern`s matched from their own base (a config file's directory).
    `per_file_ignores(path)` names rule IDs (or prefixes) switched off for one file.
    `cache` reuses results of unchanged files (see `est2tpu.cache`); `jobs` caps the worker
    processes (default: every core; 1 runs in this process). `progress(stage, done, total)`
    is told how far the run is through each stage ("scanning", "indexing", "rewriting").
    If the project index cannot be built, every file that needed it fails with the reason.

    Speed (see docs/performance.md): reading and decoding run in worker
    processes for very large trees; with a cache, a file the byte pre-filter skipped before
    and whose stat has not changed since is not read again, and one that passed it before,
    unchanged since, is read but neither pre-filtered nor hashed again; LibCST is not even
    imported when the cache answers for every file; only the modules the project index
    needs are parsed before it is built; a file that no selected rule can touch (judged
    from its text and an import scan that can only over-approximate) is neither compiled
    nor parsed by LibCST; the rest are
    parsed and migrated in worker processes.
    """
    from est2tpu.discovery import discover

    found = list(discover(paths, exclude=exclude))
    jobs = runner.workers(jobs)
    state = RunState(list(paths), Settings(target, select, tuple(ignore), use_runtime))
    state.digests = cache is not None
    tasks = [f for f in found if not isinstance(f, tuple)]
    # A file the pre-filter skipped last time, unchanged since (by its stat): skipped unread.
    stamps: dict[Path, str | None] = {}
    known: dict[Path, FileResult] = {}
    contents: dict[Path, str] = {}  # a skipped file -> the digest of its bytes
    if cache is not None:
        state.parsed_notebooks = cache.parsed_notebooks()
        state.passed = cache.passed()
        now = time.time()
        for path in tasks:
            stamps[path] = stamp = stat_stamp(path, now)
            seen = cache.unmatched(path, stamp)
            if seen is not None:
                known[path] = FileResult(path, Status.SKIPPED)
                contents[path] = seen
        tasks = [path for path in tasks if path not in known]

    def scanned(done: int) -> None:
        if progress is not None:
            progress("scanning", done, len(tasks))

    scanned(0)
    # Scanning is cheap (1,963 TF files: 0.3 s here); forking and sending texts back
    # cost more than they save below a few thousand files.
    min_scan = 4096
    state.scan_imports = jobs > 1 and len(tasks) >= min_scan
    # Without a cache every candidate is migrated, which takes LibCST: imported here while
    # the workers scan (on its own after the scan, it left a core idle for 0.4 s).
    scans = iter(
        runner.pmap(
            runner.scan_sent,
            state,
            tasks,
            jobs,
            min_tasks=min_scan,
            on_done=scanned,
            meanwhile=functools.partial(importlib.import_module, "est2tpu.pipeline")
            if cache is None
            else None,
        )
    )
    ordered: list[FileResult | Candidate] = []
    for item in found:
        if isinstance(item, tuple):
            ordered.append(FileResult(item[0], Status.FAILED, error=item[1]))
        elif item in known:
            ordered.append(known[item])
        else:
            scan = runner.scan_received(item, next(scans))
            ordered.append(scan)
            if cache is None:
                continue
            if isinstance(scan, Candidate):
                cache.put_passed(item, stamps[item], scan.digest)
            elif _unmatched(scan):
                contents[item] = _contents_digest(item)
                cache.put_unmatched(item, stamps[item], contents[item])
    yield from _migrate_scanned(ordered, state, per_file_ignores, cache, jobs, progress, contents)


def _unmatched(scan: FileResult | Candidate) -> bool:
    """Did the byte pre-filter skip the file (not a skip-file comment, not a failure)?"""
    return isinstance(scan, FileResult) and scan.status is Status.SKIPPED and scan.old_text is None


def _migrate_scanned(
    ordered: list[FileResult | Candidate],
    state: RunState,
    per_file_ignores: Callable[[Path], Collection[str]] | None,
    cache: Cache | None,
    jobs: int,
    progress: ProgressFn | None,
    contents: dict[Path, str],
) -> Iterator[FileResult]:
    cands = state.cands = [c for c in ordered if isinstance(c, Candidate)]
    state.skipped = [
        r.path for r in ordered if isinstance(r, FileResult) and r.status is Status.SKIPPED
    ]
    for cand in cands:
        cand.extra = sorted(per_file_ignores(cand.result.path)) if per_file_ignores else []
        if cand.notebook is not None and cache is not None:
            cache.put_notebook(cand.digest)  # its cells parsed (see `runner.scan_one`)
    early: dict[int, bool] = {}  # candidate -> reported as met (it failed before the index)
    done: set[int] = set()

    inputs_key = (
        digest(
            str(state.settings.use_runtime),
            *(f"{c.result.path}\0{' '.join(c.names)}\0{c.digest}" for c in cands),
            # the index looks in skipped files for calls of a helper it rewrites: each is keyed
            # by its contents (a skip-file comment's file too)
            *(
                f"skipped\0{path}\0{contents.get(path) or _contents_digest(path)}"
                for path in state.skipped
            ),
        )
        if cache is not None
        else ""
    )
    facts = cache.index_for(inputs_key) if cache is not None else None
    lengths: dict[str, int | None] = {}  # folder -> its configured line length, this run
    reals: dict[str, str] = {}  # folder -> its real path, this run

    def from_cache(facts: str) -> None:
        assert cache is not None
        for cid, cand in enumerate(cands):
            if cid in done:
                continue
            key = _file_key(cand, facts, lengths, reals)
            hit = cache.get(key, cand.result)
            if hit is not None:
                early[cid] = hit
                done.add(cid)

    if facts is not None:
        from_cache(facts)
    if len(done) < len(cands):
        from est2tpu import pipeline
        from est2tpu.cstutil import thaw

        try:
            state.index = pipeline.build_index(state, progress, jobs)
        except MigrationError as exc:
            for cid in range(len(cands)):
                if cid not in done:
                    early[cid] = _index_failed(state, cid, str(exc))
        else:
            new_facts = None
            if cache is not None:
                new_facts = index_digest(state.index)
                cache.put_index(inputs_key, new_facts)
                if new_facts != facts:
                    from_cache(new_facts)
            pending = [cid for cid in range(len(cands)) if cid not in done]

            def rewritten(n: int) -> None:
                if progress is not None:
                    progress("rewriting", n, len(pending))

            rewritten(0)
            if runner.forks(jobs, len(pending), _FINISH_MIN_TASKS):
                pipeline.before_forking(state)
            finished = runner.pmap(
                pipeline.finish_one,
                state,
                pending,
                jobs,
                min_tasks=_FINISH_MIN_TASKS,
                on_done=rewritten,
                cost=functools.partial(_cost, state),
            )
            for cid, entry in finished:
                cand = cands[cid]
                hit = entry.get("early")
                restore_result(entry, cand.result)
                early[cid] = bool(hit)
                if cache is not None and new_facts is not None:
                    key = _file_key(cand, new_facts, lengths, reals)
                    cache.put(key, cand.result, bool(hit))
        thaw()  # the run's trees are done with (`cstutil.gc_paused`)
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


def _file_key(
    cand: Candidate, facts: str, lengths: dict[str, int | None], reals: dict[str, str]
) -> str:
    """The cache key of a file's result: its path, contents, the project's facts, its
    per-file ignores, and the line length its linter configuration sets (the migrated
    text wraps at it, `layout`; `lengths` and `reals`: the folders' lengths and real paths
    this run found)."""
    length = configured_line_length(str(cand.result.path), lengths, reals)
    return Cache.file_key(
        cand.result.path, cand.digest, facts, [*cand.extra, f"\0line-length {length}"]
    )


def _contents_digest(path: Path) -> str:
    """A digest of a file's bytes (read again: the scan keeps no skipped file's bytes)."""
    try:
        return digest(path.read_bytes())
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def _cost(state: RunState, cid: int) -> int:
    """A guess of the work migrating a candidate takes: its size, and far more when it has
    been parsed for the index (the rules run over it) than when it may prove inert."""
    cand = state.cands[cid]
    return len(cand.source) * (8 if cid in state.modules else 1)


def _index_failed(state: RunState, cid: int, reason: str) -> bool:
    """Fail a file the project index could not be built for. True when it is reported as
    met: it could not even be parsed (where the reference pipeline reports it too)."""
    result = state.cands[cid].result
    if cid in state.failed:
        runner.fail(result, state.failed[cid])
        return True
    runner.fail(result, reason)
    return False
