"""Time a warm (cached) `est2tpu check` of one notebook against one Python file.

    python bench/warm_check.py [--runs 7]

Copies a bundled notebook (`tests/notebooks/`) and the quickstart trainer
(`examples/quickstart/train.py`) into a temporary directory, runs `est2tpu check --quiet`
once on each to fill a fresh cache, then times `--runs` warm runs of each, interleaved (so
that load on the machine falls on both alike), and prints the median and minimum wall time
and whether the warm run loaded LibCST. A warm run answered by the cache needs no parser; a
notebook costs what a Python file costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "tests" / "notebooks" / "datalab_bash_between_model_fn_and_estimator.before.ipynb"
MODULE = REPO / "examples" / "quickstart" / "train.py"

# The CLI, then one line on stderr: whether LibCST was imported.
DRIVER = (
    "import sys\n"
    "from est2tpu.cli import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    print('LIBCST', 'libcst' in sys.modules, file=sys.stderr)\n"
)


def run(path: Path, cache: Path) -> tuple[float, bool]:
    """One `check --quiet` of `path` with `cache`: wall seconds, LibCST loaded."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, "check", "--quiet", "--cache-dir", str(cache), path.name],
        cwd=path.parent,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{path.name}: exit {done.returncode}\n{done.stderr}")
    return elapsed, "LIBCST True" in done.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="warm runs of each file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="est2tpu-warm-") as tmp:
        work = Path(tmp)
        files = {
            "notebook (.ipynb)": work / "nb" / "notebook.ipynb",
            "module (.py)": work / "py" / "train.py",
        }
        for (_, dest), src in zip(files.items(), (NOTEBOOK, MODULE)):
            dest.parent.mkdir()
            shutil.copy(src, dest)
        # stat stamps of files this recent are not trusted by the cache (see est2tpu.cache)
        time.sleep(2.2)
        cache = work / "cache"
        for path in files.values():
            run(path, cache)
        times: dict[str, list[float]] = {name: [] for name in files}
        loaded: dict[str, bool] = dict.fromkeys(files, False)
        for _ in range(args.runs):
            for name, path in files.items():
                seconds, libcst = run(path, cache)
                times[name].append(seconds)
                loaded[name] |= libcst
    load = os.getloadavg()[0]
    print(f"warm `est2tpu check --quiet` of one file, {args.runs} runs each, load {load:.1f}")
    print()
    print("| file | median s | min s | LibCST loaded |")
    print("|---|---:|---:|---|")
    for name, seconds in times.items():
        print(
            f"| {name} | {statistics.median(seconds):.2f} | {min(seconds):.2f} | "
            f"{'yes' if loaded[name] else 'no'} |"
        )


if __name__ == "__main__":
    main()
