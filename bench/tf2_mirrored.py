"""The tf2 facade against its Keras `fit` twin under MirroredStrategy, interleaved (not a test).

A narrower, quicker cousin of `bench.py --only tf2`: `single_file_classifier` migrated with
`--target tf2`, its `Estimator.train` alone (no evaluate/predict/export), against
`bench/keras_twin.py` (Keras 2, tf-keras) over the same logical CPUs and
steps_per_execution, run A B A B ... in one process each, so that the load the shared
machine carries falls on both alike. Each child reports the steady-state rate as TF1's
StepCounterHook measures it (tracing left out) and the CPU seconds its process spent per
1,000 steps of that steady state; the parent prints medians and the facade/Keras ratio.

    .venv/bin/python bench/tf2_mirrored.py --rounds 5 --steps 1500 --replicas 8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EST2TPU = REPO / ".venv" / "bin" / "est2tpu"
TFCUR_PY = REPO / ".venv-tfcur" / "bin" / "python"
PROJECT = REPO / "fixtures" / "projects" / "single_file_classifier"


def facade_child(project: str, steps: int, model_dir: str) -> None:
    """Train the migrated program's Estimator as its main() builds it; print the rates."""
    sys.path.insert(0, project)
    import train as program  # the migrated program

    import est2tpu.runtime.tf2._estimator as estimator_module

    rates: list[float] = []
    marks: list[tuple[float, int]] = []  # (CPU time, step) at the first and last trigger
    counter = estimator_module._StepCounter

    class Counter(counter):  # type: ignore[misc,valid-type]
        def update(self, step: int) -> float | None:
            rate = super().update(step)
            if rate is not None or not marks:
                marks[1:] = [(time.process_time(), step)]
                if rate is not None:
                    rates.append(rate)
            return rate

    estimator_module._StepCounter = Counter  # type: ignore[misc]
    tf2_runtime = program.tf2_runtime
    import tensorflow as tf

    tf.keras.utils.set_random_seed(program.SEED)
    estimator = tf2_runtime.Estimator(
        model_fn=program.model_fn,
        model_dir=model_dir,
        config=tf2_runtime.RunConfig(tf_random_seed=program.SEED),
        params={"hidden_units": [16, 16], "learning_rate": 0.01},
    )
    estimator.train(input_fn=program.train_input_fn, steps=steps)
    cpu = None
    if len(marks) > 1 and marks[1][1] > marks[0][1]:
        cpu = (marks[1][0] - marks[0][0]) / (marks[1][1] - marks[0][1]) * 1000
    print(json.dumps({"rates": rates, "cpu_per_1000": cpu}))


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[dict[str, object], float]:
    """The child's JSON line and its total CPU seconds (user + system, from wait4)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"failed: {' '.join(cmd)}")
        out.seek(0)
        line = out.read().decode().strip().splitlines()[-1]
    return json.loads(line), usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--steps-per-execution", type=int, default=100)
    ap.add_argument(
        "--before",
        metavar="DIR",
        help="also run the facade of another checkout (DIR holds its est2tpu package), as "
        "a third program, to compare a change with what it replaces in the same run",
    )
    ap.add_argument("--facade-child", nargs=2, metavar=("PROJECT", "MODEL_DIR"))
    args = ap.parse_args()
    if args.facade_child:
        facade_child(args.facade_child[0], args.steps, args.facade_child[1])
        return

    work = Path(tempfile.mkdtemp(prefix="tf2-mirrored-"))
    try:
        orig = work / "orig"
        migrated = work / "migrated"
        shutil.copytree(PROJECT, orig)
        shutil.copytree(PROJECT, migrated)
        subprocess.run(
            [str(EST2TPU), "migrate", "--quiet", "--no-cache", "--target", "tf2", str(migrated)],
            check=True,
        )
        env = dict(
            os.environ,
            PYTHONPATH=str(REPO),
            EST2TPU_STEPS_PER_EXECUTION=str(args.steps_per_execution),
            EST2TPU_CPU_REPLICAS=str(args.replicas),
            TF_CPP_MIN_LOG_LEVEL="2",
        )
        env.pop("EST2TPU_JIT_COMPILE", None)
        env.pop("TF_USE_LEGACY_KERAS", None)
        common = ["--steps", str(args.steps)]
        programs = {
            "facade": [str(TFCUR_PY), __file__, *common],
            "keras2": [
                str(TFCUR_PY),
                str(REPO / "bench" / "keras_twin.py"),
                "--project",
                str(orig),
                *common,
                "--steps-per-execution",
                str(args.steps_per_execution),
                "--keras",
                "2",
                "--cpu-replicas",
                str(args.replicas),
            ],
        }
        if args.before:
            programs["before"] = programs["facade"]
        seen: dict[str, dict[str, list[float]]] = {
            name: {"rate": [], "cpu_per_1000": [], "cpu_total": []} for name in programs
        }
        for attempt in range(args.rounds):
            for name, cmd in programs.items():
                child_env = env
                if name in ("facade", "before"):
                    model_dir = work / f"{name}{attempt}"
                    cmd = [*cmd, "--facade-child", str(migrated), str(model_dir)]
                    cwd = migrated
                    if name == "before":
                        child_env = dict(env, PYTHONPATH=str(Path(args.before).resolve()))
                else:
                    cwd = orig
                result, cpu = run(cmd, child_env, cwd)
                rates = result["rates"]
                assert isinstance(rates, list)
                rate = sum(rates) / len(rates)
                seen[name]["rate"].append(rate)
                seen[name]["cpu_total"].append(cpu)
                per = result.get("cpu_per_1000")
                if isinstance(per, float):
                    seen[name]["cpu_per_1000"].append(per)
                per_text = f"{per:.2f}" if isinstance(per, float) else "-"
                print(
                    f"round {attempt} {name:7s} {rate:8.1f} steps/s  "
                    f"cpu/1000 steps {per_text}  cpu {cpu:.1f} s",
                    flush=True,
                )
        med = {
            n: {k: statistics.median(v) if v else 0.0 for k, v in d.items()}
            for n, d in seen.items()
        }
        print(
            f"\nMirroredStrategy, {args.replicas} logical CPUs, {args.steps} steps, "
            f"steps_per_execution {args.steps_per_execution}, {args.rounds} rounds ABAB"
        )
        print(
            "| program | steps/s (median) | steps/s (best) | CPU s / 1,000 steps (median) "
            "| CPU s per run (median) |"
        )
        print("|---|---:|---:|---:|---:|")
        for name, m in med.items():
            best = max(seen[name]["rate"])
            print(
                f"| {name} | {m['rate']:.1f} | {best:.1f} | {m['cpu_per_1000']:.2f} "
                f"| {m['cpu_total']:.1f} |"
            )
        if args.before:
            print(
                f"facade / before: {med['facade']['rate'] / med['before']['rate']:.3f}; "
                f"before / Keras 2 fit: {med['before']['rate'] / med['keras2']['rate']:.3f}"
            )
        print(
            f"facade / Keras 2 fit, best rates: "
            f"{max(seen['facade']['rate']) / max(seen['keras2']['rate']):.3f}; CPU per step: "
            f"Keras 2 fit / facade {med['keras2']['cpu_per_1000'] / med['facade']['cpu_per_1000']:.3f}"
        )
        ratios = [f / k for f, k in zip(seen["facade"]["rate"], seen["keras2"]["rate"])]
        print(
            f"facade / Keras 2 fit: {med['facade']['rate'] / med['keras2']['rate']:.3f} "
            f"(ratio of medians); per round {', '.join(f'{r:.3f}' for r in ratios)}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
