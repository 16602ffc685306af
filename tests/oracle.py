"""The tests' oracle: the reference pipeline, which parses and indexes every file before
migrating any, in this process. `api.migrate_paths` (pre-filter, lazy index, workers,
cache) must give the same results; the tests hold the two to each other."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from est2tpu import pipeline, suppressions
from est2tpu.checks import parse
from est2tpu.engine import is_selected
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.index import ProjectIndex
from est2tpu.runner import Candidate, fail, guarded, root_for
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
        out.append(Candidate(result, parse(decoded.text), names))

    candidates: list[Candidate] = []
    skipped: list[Path] = []

    def switched_off(path: str, rule: str) -> bool:
        # as the pipeline: --ignore and per-file ignores switch rules off, --select does not
        extra = list(per_file_ignores(Path(path))) if per_file_ignores else []
        return not is_selected(rule, None, [*ignore, *extra])

    for found in discover(paths, exclude=exclude):
        if isinstance(found, tuple):
            yield FileResult(found[0], Status.FAILED, error=found[1])
            continue
        result = FileResult(found, Status.UNCHANGED)
        loaded: list[Candidate] = []
        guarded(result, lambda: load(found, result, loaded))  # noqa: B023 - called at once
        if loaded:
            candidates += loaded
        else:
            if result.status is Status.SKIPPED:
                skipped.append(found)
            yield result

    try:
        index = pipeline._build_index(
            candidates, use_runtime, target, skipped, switched_off=switched_off
        )
    except MigrationError as exc:
        for cand in candidates:
            yield fail(cand.result, str(exc))
        return
    for cand in candidates:
        extra = list(per_file_ignores(cand.result.path)) if per_file_ignores else []

        ignores = [*ignore, *extra]
        yield guarded(
            cand.result,
            functools.partial(_finish, cand, index, target, select, ignores, use_runtime),
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
