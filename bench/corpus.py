"""Real-world breadth: est2tpu over every public Estimator program we can install (not a test).

    python bench/corpus.py                 # download the pinned corpus, run both targets, print the table
    python bench/corpus.py --tree DIR      # the same over a tree of your own (one project per subfolder)
    python bench/corpus.py --left          # also list every construct left without a rewrite or finding

The corpus is the Python files and notebooks of released PyPI packages that ship Estimator code
(pinned below, wheels only, fetched with `pip download --no-deps` into a cache). Each package is
copied into a temporary tree as its own project and, for each target, run as a user would run it:

1. `est2tpu check -f json` (what would change, the findings),
2. `est2tpu migrate` (writes the tree),
3. `est2tpu check -f json` again: every file it would still change is a second-run change.

Every file `migrate` changed must `compile()`. A crash is a file reported as an internal error,
or an est2tpu process that exits with a code other than 0, 1 or 2.

Coverage is measured by a detector that shares no code with est2tpu (`ast` and a small import
resolver): a file *defines a model_fn* when a function returns an `EstimatorSpec` (or has the
`(features, labels, mode...)` shape of one and is named `*model_fn`), and *builds an Estimator*
when it calls or subclasses an Estimator class, a premade estimator or `model_to_estimator`. In
the migrated text of those files, every construct the target cannot keep (see `residuals`) is
*left*; it is *covered* when est2tpu reported a finding on a line of its statement. A file is
*handled* when every construct left in it is covered, or when est2tpu leaves it byte for byte
with a finding that says why (`WHOLE_FILE_RULES`: under tf2, a file whose migration would
still need tf.estimator is left whole, and TF2004 names what keeps it there). The target is
90% of files handled, and each uncovered construct is a bug to fix in a rule.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = REPO / ".corpus-cache"
TARGETS = ("tpu-estimator", "tf2")
# Rules whose finding leaves the whole file as it is and says why (under tf2, a file whose
# migration would still need tf.estimator).
WHOLE_FILE_RULES = frozenset({"TF2004"})

# Released packages that ship Estimator code, pinned so the table can be re-measured. Newer
# releases of tfx, tensorflow-model-analysis, tensorflow-lattice and tf-models-official have
# dropped their Estimator code; the pins are the last releases that ship it in their wheels.
CORPUS: list[tuple[str, str]] = [
    ("tensorflow-estimator", "2.15.0"),
    ("adanet", "0.9.0"),
    ("mesh-tensorflow", "0.1.21"),
    ("tensor2tensor", "1.15.7"),
    ("tensorflow-gan", "2.1.0"),
    ("tensorflow-privacy", "0.9.0"),
    ("tensorflow-ranking", "0.5.5"),
    ("tensorflow-model-analysis", "0.30.0"),
    ("tensorflow-lattice", "2.0.13"),
    ("tensorflow-hub", "0.12.0"),
    ("tensorflow-transform", "0.30.0"),
    ("tfx", "0.23.1"),
    ("tf-models-official", "2.2.2"),
]

# ---------------------------------------------------------------------------------------------
# Fetching and laying out the corpus


def fetch(cache: Path) -> list[tuple[str, Path]]:
    """(name, wheel) for every pinned package, downloaded once into `cache`."""
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for name, version in CORPUS:
        stem = f"{name.replace('-', '_')}-{version}-"
        found = [p for p in cache.glob("*.whl") if p.name.lower().startswith(stem.lower())]
        if not found:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--only-binary=:all:", f"{name}=={version}", "-d", str(cache)],
                check=True,
            )  # fmt: skip
            found = [p for p in cache.glob("*.whl") if p.name.lower().startswith(stem.lower())]
        if not found:
            raise SystemExit(f"corpus: no wheel for {name}=={version} in {cache}")
        out.append((name, found[0]))
    return out


def unpack(wheels: list[tuple[str, Path]], dest: Path) -> None:
    """Each wheel's .py and .ipynb files under dest/<name>/ (its metadata left out)."""
    for name, wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                parts = info.filename.split("/")
                if parts[0].endswith((".dist-info", ".data")) or info.is_dir():
                    continue
                if not info.filename.endswith((".py", ".ipynb")):
                    continue
                target = dest / name / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))


# ---------------------------------------------------------------------------------------------
# The independent detector: which files define a model_fn or build an Estimator, and which
# Estimator constructs are left in a migrated text.

ESTIMATOR_ROOTS = (
    "tensorflow.estimator",
    "tensorflow.compat.v1.estimator",
    "tensorflow.compat.v2.estimator",
    "tensorflow_estimator",
    "tensorflow.python.estimator",
    "tensorflow.contrib.estimator",
    "tensorflow.contrib.learn",
    "tensorflow.contrib.tpu",
    "tensorflow.keras.estimator",
    "tensorflow.compat.v1.keras.estimator",
    "tensorflow.python.keras.estimator",
)
PREMADE = {
    f"{kind}{suffix}"
    for kind in ("DNN", "Linear", "DNNLinearCombined", "BoostedTrees", "Baseline")
    for suffix in ("Classifier", "Regressor", "Estimator", "ClassifierV2", "RegressorV2",
                   "EstimatorV2")
} | {"KMeans", "KMeansClustering", "WALSMatrixFactorization", "RNNClassifier", "RNNEstimator",
     "TimeSeriesRegressor", "ARRegressor", "LogisticRegressor"}  # fmt: skip
MODEL_FN_PARAMS = {"features", "labels", "mode"}


def _module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class _Resolver:
    """Local names -> dotted names through the module's imports (top level and nested)."""

    def __init__(self, tree: ast.AST, module: str, is_package: bool) -> None:
        self.alias: dict[str, str] = {}
        package = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
                    else:
                        head = a.name.split(".")[0]
                        self.alias[head] = head
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = package.split(".") if package else []
                    pkg = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                    base = ".".join([*pkg, *([base] if base else [])])
                for a in node.names:
                    if a.name != "*":
                        self.alias[a.asname or a.name] = f"{base}.{a.name}" if base else a.name

    def via_estimator_import(self, node: ast.AST) -> bool:
        """Is the head name of this chain bound by an import of an Estimator-only module?"""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and _is_estimator_api(self.alias.get(node.id))

    def qualify(self, node: ast.AST) -> str | None:
        chain: list[str] = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.alias.get(node.id)
        if head is None:
            return None
        return ".".join([head, *reversed(chain)])


def _is_estimator_api(q: str | None) -> bool:
    if not q or q.startswith("est2tpu"):
        return False
    if q.startswith(("tensorflow.compat.v1.estimator.tpu", "tensorflow.compat.v1.tpu")):
        return False  # the TPU homes the tpu-estimator target writes
    return any(q == root or q.startswith(root + ".") for root in ESTIMATOR_ROOTS)


@dataclass
class Construct:
    kind: str
    line: int
    end_line: int
    text: str
    # An EstimatorSpec of a model_fn that an Estimator of the same file is built with: the
    # Estimator's finding explains it too (the spec is right for a plain Estimator); one of
    # a module-level `model_fn` no Estimator of the file uses (a container builds it, as
    # SageMaker's does): a finding on the def explains it.
    explained_by: tuple[tuple[int, int], ...] = ()

    def covered(self, lines: Iterable[int]) -> bool:
        spans = [(self.line, self.end_line), *self.explained_by]
        return any(start <= n <= end for n in lines for start, end in spans)


@dataclass
class FileFacts:
    defines_model_fn: bool = False
    builds_estimator: bool = False
    uses_api: bool = False
    parse_error: str | None = None


def _statement_spans(tree: ast.AST) -> dict[int, tuple[int, int]]:
    """For each line, the span of the innermost simple statement (or header) holding it."""
    spans: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start = node.lineno
        end = node.end_lineno or start
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([d.lineno for d in node.decorator_list] + [start])
            end = node.body[0].lineno - 1 if node.body else end
        elif hasattr(node, "body") and isinstance(node.body, list) and node.body:
            end = node.body[0].lineno - 1  # a compound statement's header
        for line in range(start, max(start, end) + 1):
            old = spans.get(line)
            if old is None or (old[1] - old[0]) >= (end - start):
                spans[line] = (start, max(start, end))
    return spans


def analyse(text: str, rel: Path, target: str) -> tuple[FileFacts, list[Construct]]:
    """What the file is (from its text) and the constructs `target` cannot keep in it."""
    facts = FileFacts()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        facts.parse_error = str(exc)
        return facts, []
    res = _Resolver(tree, _module_name(rel), rel.name == "__init__.py")
    lines = text.splitlines()
    spans = _statement_spans(tree)
    left: list[Construct] = []

    explained = _specs_of_estimator_model_fns(tree, res, spans)

    def add(kind: str, node: ast.AST) -> None:
        line = node.lineno  # type: ignore[attr-defined]
        start, end = spans.get(line, (line, line))
        by = explained.get(line, ()) if kind == "EstimatorSpec" else ()
        left.append(Construct(kind, start, end, lines[line - 1].strip()[:100], by))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = {a.arg for a in [*node.args.posonlyargs, *node.args.args]}
            if MODEL_FN_PARAMS <= names and node.name.endswith("model_fn"):
                facts.defines_model_fn = True
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Call):
                    q = res.qualify(sub.value.func) or ""
                    if q.endswith("EstimatorSpec") and _is_estimator_api(q):
                        facts.defines_model_fn = True
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                q = res.qualify(base)
                if _is_estimator_api(q) and q and q.rsplit(".", 1)[-1].endswith("Estimator"):
                    facts.builds_estimator = facts.uses_api = True
                    if target == "tpu-estimator" and "TPU" not in q:
                        add("Estimator subclass", node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and target == "tf2":
            # Current TensorFlow has no Estimator-only module: the import itself fails.
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif node.level:
                modules = []
            else:
                modules = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            if any(_is_estimator_api(m) for m in modules):
                add("import of an Estimator-only module", node)
        elif isinstance(node, ast.Call):
            q = res.qualify(node.func)
            last = q.rsplit(".", 1)[-1] if q else ""
            if _is_estimator_api(q):
                facts.uses_api = True
                if last in ("Estimator", "TPUEstimator") or last in PREMADE:
                    facts.builds_estimator = True
                if last == "model_to_estimator":
                    facts.builds_estimator = True
            elif last == "model_to_estimator":
                facts.builds_estimator = facts.uses_api = True
            if target == "tpu-estimator":
                kind = _tpu_estimator_residual(q, last, node)
                if kind:
                    add(kind, node)
    if target == "tf2":
        # A use through a module current TensorFlow has (`tf.estimator.X`) fails at the use;
        # one through an Estimator-only import already failed at the import.
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                q = res.qualify(node)
                if _is_estimator_api(q) and not res.via_estimator_import(node):
                    add("tf.estimator API use", node)
    # One construct per statement and kind.
    uniq: dict[tuple[str, int], Construct] = {}
    for c in left:
        uniq.setdefault((c.kind, c.line), c)
    return facts, sorted(uniq.values(), key=lambda c: (c.line, c.kind))


def _specs_of_estimator_model_fns(
    tree: ast.Module, res: _Resolver, spans: dict[int, tuple[int, int]]
) -> dict[int, tuple[tuple[int, int], ...]]:
    """Line of each EstimatorSpec call in a def that a plain Estimator of this file is built
    with (`model_fn=name`, `self.name`, `Cls.name`, a lambda calling one) -> the span of that Estimator's statement;
    in a module-level `model_fn` that none is built with -> the span of its header."""
    estimators: dict[str, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        q = res.qualify(node.func)
        if not _is_estimator_api(q) or (q or "").rsplit(".", 1)[-1] != "Estimator":
            continue
        arg = next((k.value for k in node.keywords if k.arg == "model_fn"), None)
        if arg is None and node.args:
            arg = node.args[0]
        if isinstance(arg, ast.Lambda) and isinstance(arg.body, ast.Call):
            arg = arg.body.func  # a wrapper: the model_fn it calls
        name = arg.id if isinstance(arg, ast.Name) else None
        name = arg.attr if isinstance(arg, ast.Attribute) else name
        if name is not None:
            estimators.setdefault(name, spans.get(node.lineno, (node.lineno, node.lineno)))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "model_fn":
            estimators.setdefault("model_fn", spans.get(node.lineno, (node.lineno, node.lineno)))
    explained: dict[int, tuple[tuple[int, int], ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in estimators:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and (res.qualify(sub.func) or "").endswith(
                    "EstimatorSpec"
                ):
                    explained[sub.lineno] = (estimators[node.name],)
    return explained


def _tpu_estimator_residual(q: str | None, last: str, node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute) and node.func.attr == "export_savedmodel":
        return "export_savedmodel"
    if not _is_estimator_api(q):
        return None
    assert q is not None
    if q.startswith("tensorflow.contrib.tpu"):
        return "tf.contrib.tpu"
    if last == "Estimator":
        return "Estimator"
    if last == "EstimatorSpec":
        return "EstimatorSpec"
    if last == "RunConfig":
        return "RunConfig"
    if last == "train_and_evaluate":
        return "train_and_evaluate"
    if last == "model_to_estimator":
        return "model_to_estimator"
    if last in PREMADE:
        return "premade estimator"
    if last in ("numpy_input_fn", "pandas_input_fn"):
        return last
    return None


# ---------------------------------------------------------------------------------------------
# Running est2tpu


@dataclass
class Stats:
    files: int = 0
    uses_api: int = 0
    model_or_estimator: int = 0
    changed: int = 0
    findings: collections.Counter[str] = field(default_factory=collections.Counter)
    failed_input: int = 0  # files est2tpu rightly could not process (syntax errors, ...)
    crashes: int = 0
    not_compiling: int = 0
    second_run: int = 0
    handled: int = 0
    left_whole: int = 0  # handled: left byte for byte, with the finding that says why
    left: int = 0
    covered: int = 0
    details: list[str] = field(default_factory=list)

    def add(self, other: Stats) -> None:
        for f in fields(self):
            if f.type == "int":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.findings.update(other.findings)
        self.details.extend(other.details)


def est2tpu(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, as installed beside the Python that runs this script."""
    cmd = [sys.executable, "-m", "est2tpu", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def _report(proc: subprocess.CompletedProcess[str], what: str, stats: Stats) -> dict:
    if proc.returncode not in (0, 1, 2) or "Traceback (most recent call last)" in proc.stderr:
        stats.crashes += 1
        stats.details.append(f"crash: {what}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        return {"files": [], "findings": []}
    return json.loads(proc.stdout)


def run_project(project: Path, pristine: Path, target: str) -> Stats:
    """Migrate one project (a copy, in place) for `target` and measure it."""
    stats = Stats()
    common = ["--target", target, "--no-cache", "--quiet"]
    before = _report(est2tpu("check", "-f", "json", *common, str(project)), "check", stats)
    migrated = est2tpu("migrate", *common, str(project))
    if migrated.returncode not in (0, 1, 2) or "Traceback (most recent" in migrated.stderr:
        stats.crashes += 1
        stats.details.append(f"crash: migrate {project.name}: {migrated.stderr[-2000:]}")
    after = _report(est2tpu("check", "-f", "json", *common, str(project)), "re-check", stats)

    findings: dict[tuple[str, int | None], list[int]] = collections.defaultdict(list)
    for f in after["findings"]:
        findings[(f["path"], f.get("cell"))].append(f["line"])
    # Files the target keeps whole: under tf2, TF2004 leaves a file whose migration would
    # still need tf.estimator byte for byte, with one finding on what keeps it there.
    whole = {f["path"] for f in before["findings"] if f["rule"] in WHOLE_FILE_RULES}
    for f in before["findings"]:
        stats.findings[f["rule"]] += 1
    for entry in before["files"]:
        error = entry.get("error") or ""
        if entry["status"] == "failed":
            if error.startswith("internal error"):
                stats.crashes += 1
                stats.details.append(f"crash: {entry['path']}: {error}")
            else:
                stats.failed_input += 1
    for entry in after["files"]:
        if entry["changed"]:
            stats.second_run += 1
            stats.details.append(f"second run changes: {entry['path']}")
        elif (entry.get("error") or "").startswith("internal error"):
            stats.crashes += 1
            stats.details.append(f"crash on the second run: {entry['path']}: {entry['error']}")

    for path in sorted(p for p in project.rglob("*") if p.suffix in (".py", ".ipynb")):
        rel = path.relative_to(project)
        stats.files += 1
        old = (pristine / rel).read_bytes()
        new = path.read_bytes()
        if old != new:
            stats.changed += 1
            if path.suffix == ".py":
                try:
                    compile(new, str(path), "exec", dont_inherit=True)
                except (SyntaxError, ValueError) as exc:
                    stats.not_compiling += 1
                    stats.details.append(f"does not compile: {path}: {exc}")
        old_units = dict(code_units(path.suffix, old))
        uses_api = relevant = False
        for text in old_units.values():
            facts, _ = analyse(text, rel, target)
            uses_api |= facts.uses_api
            relevant |= facts.defines_model_fn or facts.builds_estimator
        stats.uses_api += uses_api
        if not relevant:
            continue
        stats.model_or_estimator += 1
        ok = True
        left_whole = old == new and str(path) in whole  # its finding says why all stays
        stats.left_whole += left_whole
        for cell, text in code_units(path.suffix, new):
            _, left = analyse(text, rel, target)
            marks = findings.get((str(path), cell), [])
            for c in left:
                stats.left += 1
                if c.covered(marks):
                    stats.covered += 1
                elif not left_whole:
                    ok = False
                    where = f"cell {cell}:" if cell else ""
                    stats.details.append(f"left: {path}:{where}{c.line}: {c.kind}: {c.text}")
        stats.handled += ok
    return stats


def code_units(suffix: str, data: bytes) -> list[tuple[int | None, str]]:
    """(cell, Python text): the file itself, or each code cell of a notebook (numbered as
    est2tpu numbers them, every cell from 1), IPython lines commented out."""
    text = data.decode("utf-8", "replace")
    if suffix != ".ipynb":
        return [(None, text)]
    try:
        nb = json.loads(text)
    except ValueError:
        return []
    units = []
    for number, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", [])
        src = "".join(src) if isinstance(src, list) else src
        lines = [("#" + ln if ln.lstrip()[:1] in ("%", "!") else ln) for ln in src.splitlines()]
        units.append((number, "\n".join(lines)))
    return units


# ---------------------------------------------------------------------------------------------


def table(rows: list[tuple[str, Stats]], target: str) -> str:
    head = ("project", "files", "use API", "model_fn/Estimator", "changed", "findings",
            "crashes", "not compiling", "2nd-run changes", "handled", "of them left whole",
            "left covered")  # fmt: skip
    out = [f"target {target}", "| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]  # fmt: skip
    for name, s in rows:
        pct = f"{100 * s.handled / s.model_or_estimator:.0f}%" if s.model_or_estimator else "-"
        out.append(
            f"| {name} | {s.files} | {s.uses_api} | {s.model_or_estimator} | {s.changed} | "
            f"{sum(s.findings.values())} | {s.crashes} | {s.not_compiling} | {s.second_run} | "
            f"{s.handled} ({pct}) | {s.left_whole} | {s.covered}/{s.left} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, help="run over DIR (one project per subfolder)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where wheels are kept")
    ap.add_argument("--target", action="append", choices=TARGETS, help="default: both")
    ap.add_argument("--left", action="store_true", help="list every uncovered construct")
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON here")
    args = ap.parse_args(argv)

    failed = False
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="est2tpu-corpus-") as tmp:
        pristine = Path(tmp) / "corpus"
        if args.tree:
            shutil.copytree(args.tree, pristine)
        else:
            unpack(fetch(args.cache), pristine)
        projects = sorted(p for p in pristine.iterdir() if p.is_dir())
        for target in args.target or TARGETS:
            rows: list[tuple[str, Stats]] = []
            total = Stats()
            for project in projects:
                work = Path(tmp) / target / project.name
                shutil.copytree(project, work)
                stats = run_project(work, project, target)
                rows.append((project.name, stats))
                total.add(stats)
                print(f"  {target}: {project.name} done", file=sys.stderr)
            rows.append(("**all**", total))
            print(table(rows, target))
            print("findings by rule: " + ", ".join(
                f"{k} {v}" for k, v in sorted(total.findings.items())) + "\n")  # fmt: skip
            for line in total.details:
                if args.left or not line.startswith("left: "):
                    print("  " + line)
            pct = total.handled / total.model_or_estimator if total.model_or_estimator else 1.0
            failed |= bool(total.crashes or total.not_compiling or total.second_run)
            failed |= pct < 0.9
            results[target] = {
                name: {**{k: v for k, v in vars(s).items() if k != "details"},
                       "findings": dict(s.findings)}
                for name, s in rows
            }  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
