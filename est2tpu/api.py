"""The public API: migrate source text or whole trees. Returns data; never prints or writes."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from est2tpu import catalogue
from est2tpu.engine import may_match, parse, select_rules, transform, verify
from est2tpu.ftypes import FileResult, MigrationError, RuleInfo, Status, Target
from est2tpu.index import Indexer, ProjectIndex, module_names

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
    try:
        module = parse(text)
        name = Path(path).stem if path != "-" else "__main__"
        indexer = Indexer([Indexer.source(path, module, [name])], use_runtime=use_runtime)
        indexer.register(indexer.modules[path], [name])
        _run(result, module, indexer.build(), target, select, ignore, use_runtime)
    except MigrationError as exc:
        _fail(result, str(exc))
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
        _fail(result, f"internal error: {type(exc).__name__}: {exc}")
    return result


@dataclass
class _Candidate:
    result: FileResult
    module: cst.Module
    names: list[str]


def migrate_paths(
    paths: Sequence[Path],
    *,
    target: Target = Target.TPU_ESTIMATOR,
    select: Collection[str] | None = None,
    ignore: Collection[str] = (),
    exclude: Sequence[str] = (),
    use_runtime: bool = True,
) -> Iterator[FileResult]:
    """Migrate every Python file under `paths` as one project.

    Yields one FileResult per file found, in a stable order: files that failed, were
    skipped by the pre-filter or are notebooks first as they are met, then the parsed ones.
    """
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
            if may_match(data):
                yield _fail(result, "notebooks are not migrated yet; this one uses Estimator code")
            else:
                result.status = Status.SKIPPED
                yield result
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
            module = parse(decoded.text)
        except MigrationError as exc:
            yield _fail(result, str(exc))
            continue
        root = _root_for(path, paths)
        candidates.append(_Candidate(result, module, module_names(path, root)))

    index = _build_index(candidates, use_runtime)
    for cand in candidates:
        try:
            _run(cand.result, cand.module, index, target, select, ignore, use_runtime)
        except MigrationError as exc:
            _fail(cand.result, str(exc))
        except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
            _fail(cand.result, f"internal error: {type(exc).__name__}: {exc}")
        yield cand.result


def _build_index(candidates: Sequence[_Candidate], use_runtime: bool) -> ProjectIndex:
    sources = []
    for cand in candidates:
        try:
            sources.append(Indexer.source(str(cand.result.path), cand.module, cand.names))
        except Exception:  # noqa: BLE001 - a file the indexer cannot read adds no roles
            continue
    indexer = Indexer(sources, use_runtime=use_runtime)
    for src, cand in zip(sources, candidates):
        indexer.register(src, cand.names)
    return indexer.build()


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
) -> None:
    path = str(result.path)
    rules = select_rules(target, select, ignore)
    new_text, state = transform(
        module, path=path, index=index, target=target, rules=rules, use_runtime=use_runtime
    )
    if new_text != module.code:
        verify(new_text, path)
        result.status = Status.CHANGED
    result.new_text = new_text
    result.findings = sorted(set(state.findings), key=lambda f: (f.position, f.rule_id))
    result.edits = state.edits


def _fail(result: FileResult, reason: str) -> FileResult:
    result.status = Status.FAILED
    result.error = reason
    result.new_text = result.old_text
    result.findings = []
    return result
