"""Side-by-side benchmark of est2tpu on real code (not a test): run `python bench/bench.py`.

Times, in one run on one machine: `est2tpu check` cold (--no-cache) over the TF 2.15
`tensorflow` + `tensorflow_estimator` trees and over `tensorflow_estimator` alone; a warm
re-run with the cache; TensorFlow's own `tf_upgrade_v2` over the same trees; a LibCST
parse-only pass over the files that pass est2tpu's byte pre-filter (the floor of a naive
LibCST tool); peak memory (max RSS of each child); time against tree size (25/50/100%);
and the training speed of an example project before and after migration (CPU, TF 2.15).
Timings on a shared machine are noisy: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TF215 = REPO / ".venv-tf215"
SITE = TF215 / "lib" / "python3.11" / "site-packages"
EST2TPU = REPO / ".venv" / "bin" / "est2tpu"
PY = REPO / ".venv" / "bin" / "python"
TF_PY = TF215 / "bin" / "python"


def timed(cmd: list[str], **kw: object) -> tuple[float, float, int]:
    """(seconds, max RSS of the child in MB, exit code), via wait4's rusage."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024, proc.returncode


def tree_subset(src: list[Path], fraction: float, dest: Path) -> Path:
    """A copy of every n-th .py file of the trees (keeping relative paths)."""
    files = sorted(p for root in src for p in root.rglob("*.py"))
    step = round(1 / fraction)
    for i, path in enumerate(files):
        if i % step:
            continue
        rel = path.relative_to(SITE)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)
    return dest


def check(paths: list[Path], *extra: str) -> tuple[float, float, int]:
    return timed([str(EST2TPU), "check", "--quiet", *extra, *map(str, paths)])


def tf_upgrade(tree: Path, out: Path) -> tuple[float, float, int]:
    return timed(
        [
            str(TF_PY),
            "-m",
            "tensorflow.tools.compatibility.tf_upgrade_v2_main",
            "--intree",
            str(tree),
            "--outtree",
            str(out),
            "--reportfile",
            str(out) + ".txt",
        ]
    )


PARSE_ONLY = r"""
import sys, time
from pathlib import Path
import libcst as cst
from est2tpu.discovery import discover
from est2tpu.engine import may_match
n = 0
for found in discover([Path(p) for p in sys.argv[1:]]):
    if isinstance(found, tuple):
        continue
    data = found.read_bytes()
    if may_match(data):
        try:
            cst.parse_module(data.decode("utf-8"))
            n += 1
        except Exception:
            pass
"""


def parse_only(paths: list[Path]) -> tuple[float, float, int]:
    return timed([str(PY), "-c", PARSE_ONLY, *map(str, paths)])


def row(name: str, t: tuple[float, float, int], base: float | None) -> str:
    ratio = f"{t[0] / base:.3f}" if base else ""
    return f"| {name} | {t[0]:.1f} | {ratio} | {t[1]:.0f} |"


def bench_trees(work: Path, quick: bool) -> list[str]:
    est = SITE / "tensorflow_estimator"
    full = [SITE / "tensorflow", est]
    cache = work / "cache"
    lines = ["| what | seconds | × tf_upgrade_v2 | max RSS MB |", "|---|---:|---:|---:|"]
    # tensorflow_estimator alone
    up_est = tf_upgrade(est, work / "up_est")
    lines.append(row("tf_upgrade_v2, tensorflow_estimator (116 files)", up_est, up_est[0]))
    lines.append(
        row("est2tpu check cold, tensorflow_estimator", check([est], "--no-cache"), up_est[0])
    )
    check([est], "--cache-dir", str(cache))
    lines.append(
        row(
            "est2tpu check warm (cache), tensorflow_estimator",
            check([est], "--cache-dir", str(cache)),
            up_est[0],
        )
    )
    lines.append(
        row(
            "LibCST parse-only (pre-filtered files), tensorflow_estimator",
            parse_only([est]),
            up_est[0],
        )
    )
    if quick:
        return lines
    # the full trees: tf_upgrade_v2 takes one tree, so it runs over each and the times add
    up_tf = tf_upgrade(SITE / "tensorflow", work / "up_tf")
    up_full = (up_tf[0] + up_est[0], max(up_tf[1], up_est[1]), 0)
    lines.append(
        row("tf_upgrade_v2, tensorflow + tensorflow_estimator (1,963 files)", up_full, up_full[0])
    )
    lines.append(row("est2tpu check cold, full", check(full, "--no-cache"), up_full[0]))
    check(full, "--cache-dir", str(cache))
    lines.append(
        row("est2tpu check warm (cache), full", check(full, "--cache-dir", str(cache)), up_full[0])
    )
    lines.append(row("LibCST parse-only (pre-filtered files), full", parse_only(full), up_full[0]))
    return lines


def bench_linearity(work: Path) -> list[str]:
    lines = [
        "| share of the trees | files | est2tpu cold s | s per 100 files |",
        "|---:|---:|---:|---:|",
    ]
    for fraction in (0.25, 0.5, 1.0):
        dest = tree_subset(
            [SITE / "tensorflow", SITE / "tensorflow_estimator"], fraction, work / f"sub{fraction}"
        )
        n = sum(1 for _ in dest.rglob("*.py"))
        t = check([dest], "--no-cache")
        lines.append(f"| {fraction:.0%} | {n} | {t[0]:.1f} | {100 * t[0] / n:.2f} |")
    return lines


ROUNDS = 5


def bench_training(work: Path, project: str, steps: int) -> list[str]:
    """Steps/s of the original project and of its tpu-estimator migration (use_tpu=False)."""
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    import harness

    src = harness.PROJECTS[project]
    orig = work / "orig"
    shutil.copytree(src.path, orig)
    migrated = work / "migrated"
    shutil.copytree(src.path, migrated)
    subprocess.run([str(EST2TPU), "migrate", "--quiet", "--no-cache", str(migrated)], check=False)
    programs = (
        ("original Estimator", orig),
        ("tpu-estimator migration (use_tpu=False)", migrated),
    )
    # Interleaved rounds, so that a change in the machine's load hits both programs alike.
    rates: dict[str, list[float]] = {name: [] for name, _ in programs}
    for attempt in range(ROUNDS):
        for name, tree in programs:
            model_dir = work / f"model-{name[:4]}-{attempt}"
            results = work / f"results-{name[:4]}-{attempt}.json"
            env = dict(os.environ, PYTHONPATH=str(REPO))
            t0 = time.perf_counter()
            subprocess.run(
                [
                    str(TF_PY),
                    *src.entry,
                    "--model_dir",
                    str(model_dir),
                    "--results",
                    str(results),
                    "--steps",
                    str(steps),
                ],
                cwd=tree,
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            rates[name].append(_steps_per_second(model_dir) or steps / (time.perf_counter() - t0))
    out = [(name, max(rates[name])) for name, _ in programs]
    base = out[0][1]
    lines = [
        f"| program | global_step/sec (best of {ROUNDS}, interleaved) | × original |",
        "|---|---:|---:|",
    ]
    lines += [f"| {n} | {r:.1f} | {r / base:.3f} |" for n, r in out]
    return lines


def _steps_per_second(model_dir: Path) -> float | None:
    """The mean of TF's own `global_step/sec` summaries, read from the event files."""
    code = r"""
import sys, glob
from tensorflow.compat.v1.train import summary_iterator
rates = []
for f in glob.glob(sys.argv[1] + "/**/events.out.tfevents.*", recursive=True):
    for e in summary_iterator(f):
        for v in e.summary.value:
            if v.tag == "global_step/sec":
                rates.append(v.simple_value)
print(sum(rates) / len(rates) if rates else "")
"""
    out = subprocess.run(
        [str(TF_PY), "-c", code, str(model_dir)], check=False, capture_output=True, text=True
    )
    text = out.stdout.strip().splitlines()[-1:] if out.stdout.strip() else []
    return float(text[0]) if text and text[0] else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="tensorflow_estimator only")
    ap.add_argument("--skip-training", action="store_true")
    ap.add_argument("--skip-linearity", action="store_true")
    ap.add_argument("--project", default="single_file_classifier")
    ap.add_argument("--steps", type=int, default=2000)
    args = ap.parse_args()
    if not (TF_PY.exists() and EST2TPU.exists()):
        sys.exit("needs .venv (est2tpu) and .venv-tf215 (scripts/tf215-env.sh)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="est2tpu-bench-") as tmp:
        work = Path(tmp)
        print("\n".join(bench_trees(work, args.quick)), flush=True)
        if not args.quick and not args.skip_linearity:
            print()
            print("\n".join(bench_linearity(work)), flush=True)
        if not args.skip_training:
            print()
            print("\n".join(bench_training(work, args.project, args.steps)), flush=True)
            tf2 = REPO / "est2tpu" / "runtime" / "tf2"
            cur = REPO / ".venv-tfcur"
            if not (tf2.exists() and cur.exists()):
                print(f"\ntf2 facade vs Keras fit: skipped ({tf2} or {cur} missing)")
            else:
                print(
                    "\ntf2 facade vs Keras fit: skipped (not written yet: no hand-written Keras twin of a project)"
                )
    print(
        f"load average {os.getloadavg()[0]:.1f} at the end; children max RSS "
        f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
