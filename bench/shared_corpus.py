"""est2tpu over the development corpus (`../shared/corpus`), both targets, as a user runs it.

    python bench/shared_corpus.py                      # ../shared/corpus beside the repository
    python bench/shared_corpus.py --corpus DIR         # another copy of it
    python bench/shared_corpus.py --json out.json      # also the numbers as JSON

Each expert pair's `before/` side and each project under `projects/` is copied into a scratch
tree (the corpus itself is never written) and, per target, measured exactly as `corpus.py`
measures a package: `est2tpu check -f json`, `est2tpu migrate`, `est2tpu check` again (a file
still changed is a second-run change), every changed file must compile. It prints, per target,
files changed and failed, crashes (internal errors), second-run changes and the findings by rule,
with the total of findings other than TPU010 and TF2005 (premade estimators a target cannot
take, a finding by design), the number that shows manual work left. The `after_expert` sides
are left out: they are the bar, not inputs.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import TARGETS, Stats, run_project

REPO = Path(__file__).resolve().parents[1]
# `../shared/corpus` beside a clone; a worktree under wt/ has it one level further up.
DEFAULT_CORPUS = next(
    (d / "shared" / "corpus" for d in REPO.parents if (d / "shared" / "corpus").is_dir()),
    REPO.parent / "shared" / "corpus",
)
# Findings a premade estimator gets by design when its target cannot take it (TPU010 under
# tpu-estimator, its twin TF2005 under tf2): no rewrite ports it.
BY_DESIGN = {"TPU010", "TF2005"}


def layout(corpus: Path, dest: Path) -> list[Path]:
    """One scratch project per pair's before/ side and per project, named after it."""
    out = []
    for before in sorted((corpus / "pairs").glob("*/before")):
        out.append(dest / f"pair_{before.parent.name}")
        shutil.copytree(before, out[-1])
    for project in sorted(p for p in (corpus / "projects").iterdir() if p.is_dir()):
        out.append(dest / project.name)
        shutil.copytree(project, out[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--target", action="append", choices=TARGETS, help="default: both")
    ap.add_argument("--per-project", action="store_true", help="findings per project too")
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON here")
    args = ap.parse_args(argv)
    if not (args.corpus / "pairs").is_dir():
        raise SystemExit(f"shared_corpus: no corpus at {args.corpus}")

    failed = False
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="est2tpu-shared-corpus-") as tmp:
        pristine = layout(args.corpus, Path(tmp) / "pristine")
        for target in args.target or TARGETS:
            total = Stats()
            per: dict[str, collections.Counter[str]] = {}
            for project in pristine:
                work = Path(tmp) / target / project.name
                shutil.copytree(project, work)
                stats = run_project(work, project, target)
                total.add(stats)
                per[project.name] = stats.findings
                print(f"  {target}: {project.name} done", file=sys.stderr)
            counted = sum(v for k, v in total.findings.items() if k not in BY_DESIGN)
            print(f"target {target}: {total.files} files, {total.changed} changed, "
                  f"{total.failed_input} failed (input est2tpu cannot read), "
                  f"{total.crashes} internal errors, {total.not_compiling} not compiling, "
                  f"{total.second_run} second-run changes")  # fmt: skip
            print(f"  findings {sum(total.findings.values())} "
                  f"({counted} other than {', '.join(sorted(BY_DESIGN))}); by rule: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(total.findings.items())))  # fmt: skip
            if args.per_project:
                for name, found in per.items():
                    if found:
                        print(f"    {name}: " + ", ".join(
                            f"{k} {v}" for k, v in sorted(found.items())))  # fmt: skip
            for line in total.details:
                if not line.startswith("left: "):
                    print("  " + line)
            failed |= bool(total.crashes or total.not_compiling or total.second_run)
            results[target] = {
                "files": total.files, "changed": total.changed, "failed": total.failed_input,
                "crashes": total.crashes, "not_compiling": total.not_compiling,
                "second_run": total.second_run, "findings": dict(total.findings),
                "findings_counted": counted,
                "per_project": {k: dict(v) for k, v in per.items()},
            }  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
