"""Run TensorFlow programs as forks of an interpreter that has already imported TensorFlow.

Every end-to-end test starts Python programs under TensorFlow 2.15 or current TensorFlow,
about two hundred over the suite, and each `import tensorflow` costs about 3 s of CPU: a
third of the suite's time went into importing the same library again. A server per
interpreter and pytest process imports TensorFlow once (nothing else: no Estimator, no
Keras, none of est2tpu) and forks a child per program. The child is the program as
`python -c CODE ARGS`, `python -m MODULE ARGS` or `python SCRIPT ARGS` would run it: its
own working directory, environment, `sys.argv`, `sys.path[0]`, `__main__`, stdout and stderr
(written to files, read back), the exit code of its `sys.exit`, and the atexit handlers run
before it exits. What differs from a fresh interpreter: `tensorflow` is already in
`sys.modules` (a program's `import tensorflow` finds it), and environment variables
TensorFlow or the interpreter reads at start are the server's. So the server is used only
where those (`IMPORT_TIME_ENV`: `PYTHONPATH`, `TF_CPP_MIN_LOG_LEVEL`, `CUDA_VISIBLE_DEVICES`,
`PYTHONHASHSEED`) are the ones it started with, and never for a program that tests what
importing does (`run(..., fork=False)`): those start their own interpreter, as before. A
server ends when its test process does (its requests pipe closes).

Forking right after the import is safe: TensorFlow starts no runtime when it is imported (no
session, no eager context, no thread pool: those come with the first op, in the child). The
one thread the import leaves besides the main one is OpenBLAS's, started by numpy, idle, and
handled at fork by OpenBLAS's own atfork handlers, as in any `multiprocessing` fork after
`import numpy`. `EST2TPU_NO_FORKSERVER=1` runs every program in an interpreter of its own.
`tests/e2e/test_forkserver.py` holds a fork to what a fresh interpreter does.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path

# The server's side: imports TensorFlow, then forks one child per request line.
SERVER = r"""
import json, os, runpy, signal, sys, time, traceback
import tensorflow  # noqa: F401 - the point of the server

requests = os.fdopen(0, "r")
replies = os.fdopen(os.dup(1), "w", buffering=1)
null = os.open(os.devnull, os.O_RDONLY)
main_path = list(sys.path)

def child(req):
    os.setsid()
    os.dup2(null, 0)
    for fd, name in ((1, req["stdout"]), (2, req["stderr"])):
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    kind, target, args = req["kind"], req["target"], req["args"]
    import __main__
    code = 0
    try:
        if kind == "code":
            sys.argv = ["-c", *args]
            sys.path[:] = ["", *main_path[1:]]
            glb = {"__name__": "__main__", "__builtins__": __builtins__}
            sys.modules["__main__"] = type(__main__)("__main__")
            sys.modules["__main__"].__dict__.update(glb)
            exec(compile(target, "<string>", "exec"), sys.modules["__main__"].__dict__)
        elif kind == "module":
            sys.argv = [target, *args]
            sys.path[:] = [os.getcwd(), *main_path[1:]]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path[:] = [os.path.dirname(os.path.abspath(target)), *main_path[1:]]
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)

for line in requests:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(req)
    deadline = time.monotonic() + req["timeout"]
    status = None
    while status is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
        elif time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = "timeout"
        else:
            time.sleep(0.01)
    replies.write(json.dumps({"status": status}) + "\n")
"""


class Server:
    """One TensorFlow interpreter with `tensorflow` imported, forking programs on request."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.python = python
        self.env = dict(env)
        self.proc = subprocess.Popen(
            [python, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self.env,
            text=True,
        )
        self.lock = threading.Lock()

    def serves(self, env: dict[str, str]) -> bool:
        """Whether a program with this environment runs in a fork as it would on its own."""
        return self.proc.poll() is None and all(
            env.get(key) == self.env.get(key) for key in IMPORT_TIME_ENV
        )

    def run(
        self,
        kind: str,
        target: str,
        args: list[str],
        cwd: Path,
        env: dict[str, str],
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="forkserver-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {
                "kind": kind,
                "target": target,
                "args": args,
                "cwd": str(cwd),
                "env": env,
                "stdout": str(out),
                "stderr": str(err),
                "timeout": timeout,
            }
            with self.lock:
                assert self.proc.stdin is not None and self.proc.stdout is not None
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the fork server of {self.python} died")
            status = json.loads(line)["status"]
            argv = [self.python, *_spelled(kind, target), *args]
            stdout = out.read_text(errors="replace") if out.exists() else ""
            stderr = err.read_text(errors="replace") if err.exists() else ""
            if status == "timeout":
                raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr)
            return subprocess.CompletedProcess(argv, int(status), stdout, stderr)


# What TensorFlow (or the import system) takes from the environment when it is imported.
IMPORT_TIME_ENV = ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES", "PYTHONHASHSEED")

_SERVERS: dict[str, Server] = {}


def _spelled(kind: str, target: str) -> list[str]:
    return {"code": ["-c", target], "module": ["-m", target]}.get(kind, [target])


def run(
    python: str,
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    fork: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([python, *command], cwd=, env=, capture_output=True, text=True,
    timeout=)`, forked from `python`'s server when the command is `-c CODE`, `-m MODULE` or
    `SCRIPT` and the environment is one the server can serve (else a process of its own)."""
    kind_target: tuple[str, str] | None = None
    if command[:1] == ["-c"] and len(command) >= 2:
        kind_target, args = ("code", command[1]), command[2:]
    elif command[:1] == ["-m"] and len(command) >= 2:
        kind_target, args = ("module", command[1]), command[2:]
    elif command and not command[0].startswith("-"):
        kind_target, args = ("script", command[0]), command[1:]
    if fork and kind_target is not None and os.environ.get("EST2TPU_NO_FORKSERVER") != "1":
        server = _SERVERS.get(python)
        if server is None or server.proc.poll() is not None:
            server = _SERVERS[python] = Server(python, env)
        if server.serves(env):
            return server.run(*kind_target, list(args), cwd, env, timeout)
    return subprocess.run(
        [python, *command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
