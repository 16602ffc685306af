"""A program forked from the TensorFlow server (`forkserver`) runs as in an interpreter of its
own: the same argv, working directory, `sys.path[0]`, `__main__`, environment, output, exit
code and atexit handlers, for `-c`, `-m` and a script; and a timeout kills it."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

PROBE = textwrap.dedent(
    """
    import atexit, json, os, sys
    atexit.register(lambda: print("atexit ran", file=sys.stderr))
    print(json.dumps({
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "path0": sys.path[0],
        "name": __name__,
        "env": os.environ.get("PROBE_VALUE"),
        "main": type(sys.modules["__main__"]).__name__,
        "tf_usable": __import__("tensorflow").constant(2).numpy().item(),
        "ppid": os.getppid(),
    }))
    print("to stderr", file=sys.stderr)
    sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
    """
)


def _both(
    harness: ModuleType, command: list[str], cwd: Path, exit_code: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    env = harness.tf_env({"PROBE_VALUE": "v", "PROBE_EXIT": exit_code})
    python = harness.tf_python()
    forked = harness.forkserver.run(python, command, cwd=cwd, env=env, timeout=120)
    fresh = harness.forkserver.run(python, command, cwd=cwd, env=env, timeout=120, fork=False)
    return forked, fresh


@pytest.mark.tf
@pytest.mark.parametrize("kind", ["code", "module", "script"])
def test_a_forked_program_runs_as_a_fresh_interpreter_runs_it(
    harness: ModuleType, tmp_path: Path, kind: str
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "probe.py").write_text(PROBE)
    command = {
        "code": ["-c", PROBE, "a", "b"],
        "module": ["-m", "pkg.probe", "a", "b"],
        "script": [str(package / "probe.py"), "a", "b"],
    }[kind]
    for exit_code in ("0", "3"):
        forked, fresh = _both(harness, command, tmp_path, exit_code)
        assert forked.returncode == fresh.returncode == int(exit_code), forked.stderr[-2000:]
        got, want = json.loads(forked.stdout), json.loads(fresh.stdout)
        # forked by the server (not a fallback to a process of its own), started by pytest
        server = harness.forkserver._SERVERS[harness.tf_python()]
        assert (got.pop("ppid"), want.pop("ppid")) == (server.proc.pid, os.getpid())
        assert got == want
        assert json.loads(forked.stdout)["argv"][1:] == ["a", "b"]
        # (a fresh TensorFlow also writes its start-up notices to stderr)
        for proc in (forked, fresh):
            lines = proc.stderr.splitlines()
            assert lines.index("to stderr") < lines.index("atexit ran"), proc.stderr


@pytest.mark.tf
def test_a_forked_program_past_its_timeout_is_killed(harness: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        harness.forkserver.run(
            harness.tf_python(),
            ["-c", "import time; print('started', flush=True); time.sleep(600)"],
            cwd=tmp_path,
            env=harness.tf_env(),
            timeout=3,
        )
    # The server goes on serving.
    proc = harness.forkserver.run(
        harness.tf_python(), ["-c", "print('next')"], cwd=tmp_path, env=harness.tf_env(), timeout=60
    )
    assert proc.returncode == 0 and proc.stdout == "next\n"
