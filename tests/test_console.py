"""The CLI's console writes what rich's would, byte for byte, and loads rich only when the
output needs it."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from est2tpu.console import LazyConsole

LINES = [
    "plain.py:3:1: TPU001 an ASCII finding",
    "x" * 300,  # longer than any terminal: never wrapped nor cropped
    "  leading and trailing spaces  ",
    "",
    "路径/模型.py:1:1: TPU002 wide characters",
    "emoji 🚀 and a flag 🇩🇪 and e\u0301 combined",
    "right to left: \u05e9\u05dc\u05d5\u05dd",
    "[bold]not markup[/bold] :smile: [link=x]y[/link]",
    "a\ttab",
    "carriage\rreturn",
    "\x1b[31mescape\x1b[0m",
    "bell\x07 backspace\x08 form\x0c vertical\x0b",
    "two\nlines",
    "line\u2028separator",
    "nul\x00byte",
    "zero\u200bwidth\u200djoiner",
    "a name that is not UTF-8: caf\udce9.py",
]


def rich_out(text: str, stderr: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr" if stderr else "stdout", stream)
    Console(stderr=stderr, highlight=False).out(text, highlight=False)
    return stream.getvalue()


def lazy_out(text: str, stderr: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, bool]:
    """What the CLI's console writes, and whether it needed rich for it."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr" if stderr else "stdout", stream)
    console = LazyConsole(stderr=stderr)
    console.out(text, highlight=False)
    return stream.getvalue(), console._console is not None


def random_lines(n: int) -> list[str]:
    alphabet = [chr(c) for c in range(32, 127)] + list("\t\r\n\x07\x1b\x0b\x0c\x7f\x85\xa0")
    alphabet += list("éß漢字🚀\u0301\u200b\u2028\ufeff\udce9 []:/")
    rng = random.Random(36)
    return ["".join(rng.choices(alphabet, k=rng.randrange(0, 120))) for _ in range(n)]


@pytest.mark.parametrize("stderr", [True, False], ids=["stderr", "stdout"])
def test_every_line_is_written_as_rich_writes_it(
    stderr: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    without_rich = 0
    for text in [*LINES, *random_lines(2000)]:
        written, used_rich = lazy_out(text, stderr, monkeypatch)
        assert written == rich_out(text, stderr, monkeypatch), repr(text)
        assert used_rich != text.isprintable(), repr(text)
        without_rich += not used_rich
    assert without_rich > 100  # the random lines hold printable ones too


@pytest.mark.parametrize("variable", ["FORCE_COLOR", "TTY_COMPATIBLE"])
def test_a_stream_rich_is_told_is_a_terminal_goes_through_rich(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "1")
    written, used_rich = lazy_out(LINES[0], True, monkeypatch)
    assert used_rich
    assert written == rich_out(LINES[0], True, monkeypatch)
    assert LazyConsole(stderr=True).is_terminal == Console(stderr=True).is_terminal


def test_a_pipe_is_not_a_terminal_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    console = LazyConsole(stderr=True)
    assert console.is_terminal is False and console._console is None
    assert console.width == Console(stderr=True).width  # anything else is rich's own


PROGRAM = """
import sys
from est2tpu.cli import main
try:
    main()
finally:
    print("RICH", any(m.split(".")[0] == "rich" for m in sys.modules), file=sys.__stdout__)
"""


def test_a_check_that_prints_only_finding_lines_never_loads_rich(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n"
        "est = tf.estimator.Estimator(model_fn=lambda f, l, m: None)\n"
        "est.train(input_fn=lambda: None, max_steps=10)\n"
    )
    argv = ["check", "--quiet", "--cache-dir", str(tmp_path / "c"), str(tmp_path)]
    runs = [
        subprocess.run(
            [sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, check=False
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 1, run.stderr
        assert "train.py" in run.stderr  # a finding line, or "would migrate"
        assert "RICH False" in run.stdout
    loud = subprocess.run(
        [sys.executable, "-c", PROGRAM, *argv[:1], *argv[2:]],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "RICH True" in loud.stdout  # the summary table is rich's
    assert loud.stderr.startswith(runs[1].stderr)
