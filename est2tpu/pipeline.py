"""The parsing half of a run: the project index, rules and verification (LibCST).

`est2tpu.api` imports this module only when some file has to be parsed, so a run that the
cache answers completely (a warm pre-commit hook or CI check) never loads LibCST. It receives
the run's state (`runner.RunState`) and never imports the API.
"""

from __future__ import annotations

import collections
import functools
import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path, PurePath
from typing import Any

import libcst as cst

from est2tpu import cstpatch, inert, pytree, suppressions
from est2tpu.cache import store_result
from est2tpu.checks import MAX_NESTING, too_deep
from est2tpu.cstutil import starts
from est2tpu.engine import is_selected, migrate_module, parse_split, select_rules
from est2tpu.ftypes import FileResult, Finding, MigrationError, Position, Status, Target
from est2tpu.index import ProjectIndex, SourceModule
from est2tpu.names import ImportTable, canonical_tf, spelled_in_code
from est2tpu.notebook import MAGIC_CELL_ID, Notebook, cell_of
from est2tpu.project.build import Indexer
from est2tpu.project.facts import nearest_claim
from est2tpu.registry import rule_classes
from est2tpu.rule import FileState, Rule
from est2tpu.runner import (
    Candidate,
    ProgressFn,
    RunState,
    Settings,
    guarded,
    pmap,
)
from est2tpu.scan import known_code, may_spell, remember_code
from est2tpu.tfapi import USE_NAMES


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

    def work() -> None:
        module, split = parse_split(text, inert.split(text, None, too_deep))
        name = Path(path).stem if path != "-" else "__main__"
        indexer = Indexer(
            [Indexer.source(path, module, [name], split.text if split else text)],
            use_runtime=use_runtime,
            follow_helpers=target is Target.TF2,
            switched_off=lambda _path, rule: not is_selected(rule, None, ignore),
        )
        indexer.register(indexer.modules[path], [name])
        _run(result, module, indexer.build(), target, select, ignore, use_runtime, text, split)

    return guarded(result, work)


def migrate_notebook(
    data: bytes,
    target: Target,
    path: str,
    select: Collection[str] | None,
    ignore: Collection[str],
    use_runtime: bool,
) -> FileResult:
    """`api.migrate_notebook`: one notebook's JSON on its own (its cells are the project)."""
    from est2tpu import notebook

    result = FileResult(Path(path), Status.UNCHANGED)

    def work() -> None:
        nb = notebook.load(data)
        result.old_text = result.new_text = nb.raw
        if not nb.python or suppressions.skips_file(nb.head):
            result.status = Status.SKIPPED
            return
        name = Path(path).stem if path != "-" else "__main__"
        module, _ = parse_split(nb.program, None)
        cand = Candidate(result, module, [name], nb)
        ignores = list(ignore)
        index = _build_index(
            [cand],
            use_runtime,
            target,
            switched_off=lambda _path, rule: not is_selected(rule, None, ignores),
        )
        _run(result, module, index, target, select, ignores, use_runtime, cand.source)
        _back_to_notebook(result, nb, select, ignores)

    return guarded(result, work)


def _split_candidate(state: RunState, cid: int) -> inert.Split | None:
    """The candidate's text with its inert defs set aside (`inert.split`), once per run."""
    if cid not in state.splits:
        cand = state.cands[cid]
        split = None
        if cand.notebook is None:
            split = inert.split(cand.source, functools.partial(_mentioned, state, cid), too_deep)
        state.splits[cid] = split
    return state.splits[cid]


def _parse_candidate(state: RunState, cid: int) -> tuple[cst.Module, inert.Split | None]:
    module, split = parse_split(state.cands[cid].source, _split_candidate(state, cid))
    state.splits[cid] = split
    return module, split


def _mentioned(state: RunState, cid: int, names: Collection[str]) -> set[str]:
    """Which of these names other files of the run mention (the index finds a def in
    another module by its name, so a def named elsewhere is never set aside)."""
    if state.mentions is None:
        state.mentions = collections.Counter()
        for cand in state.cands:
            state.mentions.update(set(_IDENT.findall(cand.source)))
    own = set(_IDENT.findall(state.cands[cid].source))
    return {name for name in names if state.mentions[name] > (name in own)}


_IDENT = re.compile(r"[^\W\d]\w*")


def _uses_estimator(state: RunState, cid: int, forked: bool = False) -> bool:
    """Does the candidate's code use an Estimator API (`ImportTable.uses` with USE_NAMES)?

    Asked of the text with its inert defs set aside when it is big: they spell nothing
    through a TensorFlow import (`inert.split` keeps every def that does), and the
    tokenizer over a 45,000-line module cost more than everything else but the parse.
    In a worker (`forked`) the split is its own, without the defs other files mention
    (which only keeps more defs, and is what the parent's parse needs; a worker's split
    is not the parent's), so that no worker counts every candidate's words again.
    """
    cand = state.cands[cid]
    imports = cand.import_scan()
    assert imports is not None
    table = _Superset(imports)
    spellings = [s for name in USE_NAMES for s in table.spellings(name)]
    # Most spellings share their last identifier (`tf.estimator.Estimator`,
    # `tf.compat.v1.estimator.Estimator`): each is looked for once.
    if not any(last in cand.source for last in {s.rpartition(".")[2] for s in spellings}):
        return False
    # Nor where the raw text shows no spelling (`may_spell`): the text with its inert defs
    # set aside holds less code (a string literal stands for each def), so no split for it.
    if not may_spell(cand.source, spellings):
        return False
    if forked:
        split = inert.split(cand.source, None, too_deep) if cand.notebook is None else None
    else:
        split = _split_candidate(state, cid)
    return spelled_in_code(split.text if split is not None else cand.source, spellings)


class _LazyIndexer(Indexer):
    """An Indexer that parses a module another one refers to only when it is looked up.

    Only modules that may use an Estimator API are collected (the reference Indexer's
    collector skips every other module); a name resolves, as there, to the module that
    claims it, parsed and nearest to the importing file (`nearest_claim`).
    """

    def __init__(
        self,
        claims: dict[str, list[int]],
        load: Callable[[int], SourceModule | None],
        use_runtime: bool,
        follow_helpers: bool,
        sources: Sequence[str] = (),
        unread: Sequence[Path] = (),
        paths: Sequence[str] = (),
        switched_off: Callable[[str, str], bool] | None = None,
    ) -> None:
        super().__init__(
            [],
            use_runtime=use_runtime,
            follow_helpers=follow_helpers,
            unread=unread,
            switched_off=switched_off,
        )
        self.claims = claims
        self.load = load
        self.sources = sources  # every candidate's text, by candidate id
        self.paths = paths  # every candidate's path, by candidate id

    def texts_in(self, here: PurePath) -> dict[str, str]:
        texts = super().texts_in(here)
        texts.update(
            {
                path: text
                for path, text in zip(self.paths, self.sources)
                if PurePath(path).parent == here
            }
        )
        return texts

    def mentioning(self, word: str) -> list[SourceModule]:
        # modules the index did not need yet may call a helper too: parse those that spell it
        found = [self.load(cid) for cid, text in enumerate(self.sources) if word in text]
        return [src for src in found if src is not None and src.path not in self.excluded]

    def module_for(self, dotted_name: str, near: str | None = None) -> SourceModule | None:
        found: dict[str, SourceModule] = {}
        for cid in self.claims.get(dotted_name, ()):
            src = self.load(cid)
            if src is not None:
                found[src.path] = src
        for excluded in self.excluded:
            found.pop(excluded, None)
        path = nearest_claim(list(found), dotted_name, near)
        return found[path] if path is not None else None


def _needed(state: RunState, cid: int, forked: bool = False) -> bool:
    """Does the index need this candidate parsed before it is built?"""
    cand = state.cands[cid]
    return (
        cand.notebook is not None
        or cand.import_scan() is None
        or _uses_estimator(state, cid, forked)
        # code a first run migrated: its TPUEstimators and loops are the shim's
        or ("est2tpu.runtime" in cand.source and _SHIM_IMPORT.search(cand.source) is not None)
    )


def _needed_forked(state: RunState, cid: int) -> tuple[bool, str | None]:
    """`_needed` in a worker, with the file's code when the worker tokenized its whole text
    (`scan.code_only`), for the parent to keep: None when it did not, or when the same
    text came just before (the parent has it from that one)."""
    source = state.cands[cid].source
    fresh = known_code(source) is None
    needed = _needed(state, cid, forked=True)
    return needed, known_code(source) if fresh else None


# Below this many candidates `_needed` runs in the parent (forking costs more than it saves).
_MIN_NEEDED_TASKS = 512


def build_index(state: RunState, progress: ProgressFn | None = None, jobs: int = 1) -> ProjectIndex:
    """Parse what the index needs (here, before forking) and build it into `state`.

    Parsed trees go to `state.modules`, parse errors to `state.failed`. MigrationError when
    the index itself cannot be built.
    """
    cands = state.cands
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
            module, split = _parse_candidate(state, cid)
        except MigrationError as exc:
            state.failed[cid] = str(exc)
            return None
        state.modules[cid] = module
        try:
            text = split.text if split is not None else cand.source
            src = Indexer.source(str(cand.result.path), module, cand.names, text)
        except Exception:  # noqa: BLE001 - a file the indexer cannot read adds no roles
            return None
        sources[cid] = src
        indexer.modules[src.path] = src
        return src

    settings = state.settings
    extra = {str(cand.result.path): cand.extra for cand in cands}

    def switched_off(path: str, rule: str) -> bool:
        # --ignore and per-file ignores switch rules off; --select runs some rules of a
        # migration (each rule's fixtures run so), which a run with the others completes
        return not is_selected(rule, None, [*settings.ignore, *extra.get(path, ())])

    indexer = _LazyIndexer(
        claims,
        load,
        settings.use_runtime,
        settings.target is Target.TF2,
        [cand.source for cand in cands],
        state.skipped,
        [str(cand.result.path) for cand in cands],
        switched_off,
    )
    # Asked in the workers when there are many: in the parent it ran alone, one core idle
    # (0.6 s of a cold run over five copies of TensorFlow's tree). Files of the same text
    # are asked one after the other, so that a worker's memo of the text's code
    # (`scan.code_only`) serves them all, as it does in one process.
    if jobs > 1 and len(cands) >= _MIN_NEEDED_TASKS:
        ids = sorted(range(len(cands)), key=lambda cid: cands[cid].digest or cands[cid].source)
        wanted = pmap(
            _needed_forked, state, ids, jobs, min_tasks=_MIN_NEEDED_TASKS, meanwhile=rule_classes
        )
        needed = sorted(cid for cid, (want, _) in zip(ids, wanted, strict=True) if want)
        # The rules' `applies` ask the same text's code in the workers that finish the run,
        # forked from here: what these workers tokenized is not tokenized again there.
        for cid, (_, code) in zip(ids, wanted, strict=True):
            if code is not None:
                remember_code(cands[cid].source, code)
    else:
        needed = [cid for cid in range(len(cands)) if _needed(state, cid)]
    for done, cid in enumerate(needed):
        if progress is not None:
            progress("indexing", done, len(needed))
        load(cid)
    if progress is not None:
        progress("indexing", len(needed), len(needed))
    # The rules, imported here once rather than in each worker that finishes the run.
    rule_classes()
    try:
        return indexer.build()
    except Exception as exc:  # noqa: BLE001 - reported on every file, the run goes on
        raise MigrationError(
            f"internal error: the project index failed: {type(exc).__name__}: {exc}"
        ) from None


def before_forking(state: RunState) -> None:
    """LibCST's codemods (the rules add and remove imports through them), imported once in
    the parent when workers forked from it migrate parsed files, rather than in each worker.
    A run in one process imports them at a rule's first use (`cstpatch`): a run whose rules
    change nothing never does."""
    if state.modules:
        cstpatch.load()


def finish_one(state: RunState, cid: int) -> tuple[int, dict[str, object]]:
    """Migrate one candidate against the built index (in a worker): its stored result.

    Stored as met ("early") when the file could not be parsed, as the reference pipeline
    reports it.
    """
    cand = state.cands[cid]
    assert state.index is not None
    index, settings = state.index, state.settings
    result = cand.result
    ignores = [*settings.ignore, *cand.extra]
    parsing = True

    def work() -> None:
        nonlocal parsing
        if cid in state.failed:
            raise MigrationError(state.failed[cid])
        module = state.modules.get(cid)
        split = state.splits.get(cid)
        if module is None:
            rules = select_rules(settings.target, settings.select, ignores)
            applying = _applying(cand, rules, index, settings.target, settings.use_runtime)
            if applying is not None and (
                not applying or _scanned(result, cand, rules, applying, index, settings, ignores)
            ):
                parsing = False
                return
            module, split = _parse_candidate(state, cid)
        parsing = False
        _run(
            result,
            module,
            index,
            settings.target,
            settings.select,
            ignores,
            settings.use_runtime,
            cand.source,
            split,
        )
        if cand.notebook is not None:
            _back_to_notebook(result, cand.notebook, settings.select, ignores)

    guarded(result, work)
    return cid, store_result(result, parsing and result.status is Status.FAILED)


# A suppression comment can make a finding (E2T001) in a file no rule touches.
_SUPPRESSION_HINT = re.compile(r"est2tpu", re.IGNORECASE)


def _suppression_hint(text: str) -> bool:
    """`_SUPPRESSION_HINT.search(text)`, by a lower-cased copy where the text is ASCII: a
    case-insensitive search has no fast literal scan, and cost a third of a second over
    TensorFlow's tree."""
    if text.isascii():
        return "est2tpu" in text.lower()
    return _SUPPRESSION_HINT.search(text) is not None


def _applying(
    cand: Candidate,
    rules: Sequence[type[Rule]],
    index: ProjectIndex,
    target: Target,
    use_runtime: bool,
) -> list[type[Rule]] | None:
    """The selected rules whose `applies` says yes, asked without parsing the file with an
    import table that can only over-approximate the real one: none when migrating the file
    cannot change or report anything. None when that cannot be told without LibCST: a
    notebook, imports the scan cannot read, a suppression comment, a last line without a
    newline (LibCST may not give it back), or a rule that cannot answer here.

    A file no rule acts on is left as it is without being compiled, as a file the byte
    pre-filter drops is: est2tpu reports syntax errors in the files it parses (those a rule
    acts on and those the project index reads), not in the files it leaves alone.
    """
    text = cand.source
    imports = cand.import_scan()
    if cand.notebook is not None or imports is None:
        return None
    if text and not text.endswith("\n"):
        return None
    if _suppression_hint(text):
        return None
    state = FileState(
        str(cand.result.path), index, target, _Superset(imports), text, use_runtime=use_runtime
    )
    try:
        applying = [rule for rule in rules if rule.applies(state)]
    except Exception:  # noqa: BLE001 - a rule that cannot answer here is simply run
        return None
    return applying


def _scanned(
    result: FileResult,
    cand: Candidate,
    rules: Sequence[type[Rule]],
    applying: Sequence[type[Rule]],
    index: ProjectIndex,
    settings: Settings,
    ignores: Collection[str],
) -> bool:
    """Report a file where only FINAL rules apply from Python's own tree (`Rule.scan`),
    without LibCST: what `_run` would report, the text unchanged. False when a rule
    cannot tell there, or the text is one whose LibCST positions or failure Python's
    tree does not show (`pytree.read`): the file is then parsed as before.
    """
    if not all(rule.FINAL for rule in applying):
        return False
    text = cand.source
    tree = pytree.read(text, MAX_NESTING)
    if tree is None:
        return False
    path = str(result.path)
    table = ImportTable.from_ast(tree)
    state = FileState(path, index, settings.target, table, text, use_runtime=settings.use_runtime)
    for rule in rules:
        if not rule.FINAL or not rule.applies(state):
            continue  # as `engine._transform` asks the FINAL rules, with the real table
        reported = rule.scan(tree, state)
        if reported is None:
            return False
        explained = {f.position.line for f in state.findings}
        for node, message in reported:
            line, column = tree.start(node)
            if line not in explained:
                state.findings.add(Finding(rule.ID, message, Position(line, column + 1), path))
    ambiguous = functools.partial(_ambiguous_imports, table, tree.starts, path)
    _report(result, state.findings, rules, settings.select, ignores, text, ambiguous)
    return True


_SHIM_IMPORT = re.compile(r"^[ \t]*(?:from|import)[ \t]+est2tpu\.runtime\b", re.MULTILINE)


class _Superset(ImportTable):
    """Every (name, module) pair an import scan found, none judged ambiguous: an import
    table whose spellings include every spelling of the real one."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        super().__init__(dict(pairs))
        # A pair whose module is no TensorFlow API path (`tensorflow.python.framework.ops`,
        # 94% of the pairs in TensorFlow's own tree) spells nothing (`ImportTable.spellings`).
        self.pairs = [(name, target) for name, target in pairs if canonical_tf(target) is not None]
        # The rules ask for the same names file after file (and `_uses_estimator` asks for
        # every USE_NAMES one): building a one-binding table per pair and name cost more
        # than the rest of a cold run over TensorFlow's tree before the parse.
        self._spelled: dict[str, list[str]] = {}

    def spellings(self, canonical: str) -> list[str]:
        found = self._spelled.get(canonical)
        if found is None:
            found = self._spelled[canonical] = [
                s for name, target in self.pairs for s in _pair_spellings(name, target, canonical)
            ]
        return list(found)


@functools.lru_cache(maxsize=65536)
def _pair_spellings(name: str, target: str, canonical: str) -> tuple[str, ...]:
    return tuple(ImportTable({name: target}).spellings(canonical))


def _build_index(
    candidates: Sequence[Candidate],
    use_runtime: bool,
    target: Target,
    skipped: Sequence[Path] = (),
    switched_off: Callable[[str, str], bool] | None = None,
) -> ProjectIndex:
    """The project index; a file the indexer cannot read adds no roles (and shifts nothing).
    `switched_off(path, rule)`: the rules --ignore and per-file ignores switch off there.

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
        [src for src, _ in pairs],
        use_runtime=use_runtime,
        follow_helpers=target is Target.TF2,
        unread=skipped,
        switched_off=switched_off,
    )
    try:
        for src, cand in pairs:
            indexer.register(src, cand.names)
        return indexer.build()
    except Exception as exc:  # noqa: BLE001 - reported on every file, the run goes on
        raise MigrationError(
            f"internal error: the project index failed: {type(exc).__name__}: {exc}"
        ) from None


def _back_to_notebook(
    result: FileResult, nb: Notebook, select: Collection[str] | None, ignore: Collection[str]
) -> None:
    """Turn a result over the joined cells back into one over the notebook's JSON."""
    result.new_text = nb.render(result.new_text or nb.program)
    result.status = Status.CHANGED if result.new_text != nb.raw else Status.UNCHANGED
    findings = nb.locate_findings(result.findings, str(result.path))
    if is_selected(MAGIC_CELL_ID, select, ignore):
        findings += nb.magic_findings(str(result.path))
    result.findings = sorted(findings, key=lambda f: (cell_of(f.path)[1] or 0, f.position))
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
    split: inert.Split | None = None,
) -> None:
    """Migrate one parsed module into its result (`engine.migrate_module`), then report."""
    path = str(result.path)
    rules = select_rules(target, select, ignore)
    new_text, state = migrate_module(
        source,
        path=path,
        index=index,
        target=target,
        rules=rules,
        use_runtime=use_runtime,
        module=module,
        split=split,
    )
    if new_text != source:
        result.status = Status.CHANGED
    result.new_text = new_text

    def ambiguous() -> list[Finding]:
        return _ambiguous_imports(
            ImportTable.from_module(module), functools.partial(starts, module), path
        )

    _report(result, state.findings, rules, select, ignore, source, ambiguous)
    result.edits = state.edits


def _report(
    result: FileResult,
    found: Collection[Finding],
    rules: Sequence[type[Rule]],
    select: Collection[str] | None,
    ignore: Collection[str],
    source: str,
    ambiguous: Callable[[], list[Finding]],
) -> None:
    """The file's findings: the rules', the ambiguous imports' (`_ambiguous_imports`),
    suppression comments honoured."""
    path = str(result.path)
    ran = [cls.ID for cls in rules]

    def enabled(rule_id: str) -> bool:
        if rule_id in (suppressions.UNUSED_ID, AMBIGUOUS_IMPORT_ID):
            return is_selected(rule_id, select, ignore)
        return any(r.startswith(rule_id) for r in ran)

    everything = set(found)
    if enabled(AMBIGUOUS_IMPORT_ID) and ran:
        everything.update(ambiguous())
    # The engine reports everything; suppression comments are honoured here.
    findings = suppressions.apply(everything, suppressions.find(source), enabled=enabled, path=path)
    # The message breaks ties: a set's order changes with each process's string hashing.
    result.findings = sorted(findings, key=lambda f: (f.position, f.rule_id, f.message))


#: The engine-level ID of a name that imports bind to TensorFlow and to something else.
AMBIGUOUS_IMPORT_ID = "E2T003"


def _ambiguous_imports(
    table: ImportTable, starts: Callable[[list[Any]], dict[int, tuple[int, int]]], path: str
) -> list[Finding]:
    """A finding at the import that made a TensorFlow name ambiguous: every use of the name
    is left unresolved, so an Estimator API behind it would be neither migrated nor reported.
    `starts` places the import statements of the tree `table` was read from, LibCST's
    (`cstutil.starts`) or Python's (`PyTree.starts`)."""
    ambiguous = table.ambiguous_tensorflow()
    if not ambiguous:
        return []
    where = starts([table.conflicts[name] for name in ambiguous])
    out = []
    for name, targets in ambiguous.items():
        line, column = where.get(id(table.conflicts[name]), (1, 0))
        meanings = ", ".join(targets)
        message = (
            f"`{name}` is imported as different things ({meanings}): est2tpu cannot tell which "
            f"one a use of `{name}` means and leaves every use as it is; import each under "
            "its own name"
        )
        out.append(Finding(AMBIGUOUS_IMPORT_ID, message, Position(line, column + 1), path))
    return out
