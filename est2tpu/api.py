"""The public API: migrate source text or whole trees. Returns data; never prints or writes."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from est2tpu import catalogue, suppressions
from est2tpu.engine import may_match, parse, select_rules, transform, verify
from est2tpu.ftypes import FileResult, MigrationError, RuleInfo, Status, Target
from est2tpu.index import Indexer, ProjectIndex, module_names
from est2tpu.notebook import Notebook


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
    module: cst.Module
    names: list[str]
    notebook: Notebook | None = None

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
) -> Iterator[FileResult]:
    """Migrate every Python file and notebook under `paths` as one project.

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
        try:
            src = Indexer.source(str(cand.result.path), cand.module, cand.names, cand.source)
        except Exception:  # noqa: BLE001 - a file the indexer cannot read adds no roles
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
            chosen = select is None or any(rule_id.startswith(p.upper()) for p in select)
            return chosen and not any(rule_id.startswith(p.upper()) for p in ignore)
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
