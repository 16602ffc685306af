"""The tests' oracle: the reference pipeline, which parses and indexes every file before
migrating any, in this process. `api.migrate_paths` (pre-filter, lazy index, workers,
cache) must give the same results; the tests hold the two to each other."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from est2tpu import pipeline, suppressions
from est2tpu.checks import parse
from est2tpu.engine import is_selected, select_rules
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.index import ProjectIndex
from est2tpu.runner import Candidate, RunState, Settings, fail, guarded
from est2tpu.scan import may_match, module_names


def migrate_all_parsed(
    paths: Sequence[Path],
    *,
    target: Target = Target.TPU_ESTIMATOR,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    exclude: Sequence[str] = (),
    use_runtime: bool = True,
    per_file_ignores: Callable[[Path], Collection[str]] | None = None,
) -> Iterator[FileResult]:
    """The reference pipeline: parse every file that passes the byte pre-filter, index them
    all, migrate them all, in this process.

    `migrate_paths` must give the same results; the tests hold the two to each other.
    Yields one FileResult per file found, in the same order as `migrate_paths`.
    """
    from est2tpu import notebook
    from est2tpu.discovery import discover
    from est2tpu.textio import check_wide, decode

    def load(path: Path, result: FileResult, out: list[Candidate]) -> None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise MigrationError(f"cannot read: {exc.strerror or exc}") from None
        check_wide(data)
        if not may_match(data, target):
            result.status = Status.SKIPPED
            return
        if path.suffix == ".ipynb":
            nb = notebook.load(data)
            result.old_text = result.new_text = nb.raw
            if not nb.python or suppressions.skips_file(nb.head):
                result.status = Status.SKIPPED
                return
            out.append(Candidate(result, parse(nb.program), [path.stem], nb))
            return
        decoded = decode(data)
        result.old_text = result.new_text = decoded.text
        result.encoding, result.bom, result.newline = (
            decoded.encoding,
            decoded.bom,
            decoded.newline,
        )
        if suppressions.skips_file(decoded.text):
            result.status = Status.SKIPPED
            return
        names = module_names(path, root_for(path, paths))
        try:
            module = parse(decoded.text)
        except MigrationError as exc:
            # Reported only where a rule acts on the file (`pipeline._applying`): a file
            # no rule acts on is left unread, as the byte pre-filter leaves one.
            unparsed[path] = str(exc)
            module = None
        out.append(Candidate(result, module, names))

    candidates: list[Candidate] = []
    skipped: list[Path] = []
    unparsed: dict[Path, str] = {}  # a candidate LibCST cannot parse -> why

    def switched_off(path: str, rule: str) -> bool:
        # as the pipeline: --ignore and per-file ignores switch rules off, --select does not
        extra = list(per_file_ignores(Path(path))) if per_file_ignores else []
        return not is_selected(rule, None, [*ignore, *extra])

    # Failures and skips as they are met, then the parsed files (as `migrate_paths` orders
    # them); a file LibCST cannot parse is a failure met there, unless no rule acts on it.
    met: list[FileResult | Candidate] = []
    for found in discover(paths, exclude=exclude):
        if isinstance(found, tuple):
            met.append(FileResult(found[0], Status.FAILED, error=found[1]))
            continue
        result = FileResult(found, Status.UNCHANGED)
        loaded: list[Candidate] = []
        guarded(result, lambda: load(found, result, loaded))  # noqa: B023 - called at once
        if loaded:
            candidates += loaded
            met += loaded
        else:
            if result.status is Status.SKIPPED:
                skipped.append(found)
            met.append(result)

    def ignores_of(cand: Candidate) -> list[str]:
        return [*ignore, *(per_file_ignores(cand.result.path) if per_file_ignores else [])]

    unread: set[int] = set()  # candidates LibCST cannot parse that no rule acts on
    index: ProjectIndex | None = None
    index_error = ""
    try:
        index = pipeline._build_index(
            [c for c in candidates if c.module is not None],
            use_runtime,
            target,
            skipped,
            switched_off=switched_off,
        )
    except MigrationError as exc:
        index_error = str(exc)
    for cand in candidates:
        if cand.module is None:
            rules = select_rules(target, select, ignores_of(cand))
            alone = RunState([], Settings(target, select, tuple(ignore), use_runtime), [cand])
            if (
                index is not None
                and pipeline._applying(cand, rules, index, target, use_runtime) == []
                and not pipeline._needed(alone, 0, forked=True)  # the index does not read it
            ):
                unread.add(id(cand))
            else:
                fail(cand.result, unparsed[cand.result.path])
    for item in met:
        if isinstance(item, FileResult):
            yield item
        elif item.module is None and id(item) not in unread:
            yield item.result
    for cand in candidates:
        if cand.module is None:
            if id(cand) in unread:
                yield cand.result  # unchanged, unread
        elif index is None:
            yield fail(cand.result, index_error)
        else:
            yield guarded(
                cand.result,
                functools.partial(
                    _finish, cand, index, target, select, ignores_of(cand), use_runtime
                ),
            )


def _finish(
    cand: Candidate,
    index: ProjectIndex,
    target: Target,
    select: Collection[str] | None,
    ignores: Collection[str],
    use_runtime: bool,
) -> None:
    """Migrate a parsed candidate into its result."""
    assert cand.module is not None
    pipeline._run(
        cand.result, cand.module, index, target, select, ignores, use_runtime, cand.source
    )
    if cand.notebook is not None:
        pipeline._back_to_notebook(cand.result, cand.notebook, select, ignores)


def root_for(path: Path, roots: Sequence[Path]) -> Path | None:
    """The directory a file's dotted module name counts from: the root it was found under."""
    for root in roots:
        if root.is_dir():
            try:
                path.relative_to(root)
            except ValueError:
                continue
            return root
    return path.parent
