"""Helpers of the REPL tests (rlang/repl; LANGUAGE.md §12; docs/repl.md).

- `repl(*inputs)` runs complete inputs in one in-process `Session` (the same session
  for every call within a test) and returns (stdout, stderr) of those inputs; the
  session is `repl.session`.
- `run_repl(stdin, *args)` runs `python -m rlang ARGS…` in a subprocess with `stdin`
  piped in (script mode) and returns (exit status, stdout, stderr).
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlang.repl.session import Session

REPO = Path(__file__).resolve().parents[2]


class Transcript:
    def __init__(self, invcheck: bool = True):
        self.out, self.err = io.StringIO(), io.StringIO()
        self.session = Session(out=self.out, err=self.err, invcheck=invcheck)

    def __call__(self, *inputs: str) -> tuple[str, str]:
        out_start, err_start = self.out.tell(), self.err.tell()
        for text in inputs:
            self.session.execute(text)
        return self.out.getvalue()[out_start:], self.err.getvalue()[err_start:]

    @property
    def store(self) -> dict:
        return self.session.store


def _run_repl(stdin: str, *args: str, cwd=REPO, timeout: float = 120) -> tuple[int, str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "rlang", *args], input=stdin, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def repl(monkeypatch) -> Transcript:
    monkeypatch.chdir(REPO)
    return Transcript()


@pytest.fixture
def repl_without_checks(monkeypatch) -> Transcript:
    monkeypatch.chdir(REPO)
    return Transcript(invcheck=False)


@pytest.fixture
def run_repl():
    return _run_repl
