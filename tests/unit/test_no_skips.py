"""The repository's pytest runs fail when a test skips or xfails, instead of passing having tested nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text("import pytest\n\n" + body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.no_skips", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_skipped_test_fails_the_run(tmp_path: Path) -> None:
    res = run(tmp_path, "def test_ok():\n    pass\n\ndef test_needs_cluster():\n    pytest.skip('no cluster')\n")
    assert res.returncode == pytest.ExitCode.TESTS_FAILED
    assert "1 test(s) skipped or xfailed" in res.stdout and "test_needs_cluster" in res.stdout


def test_an_xfail_fails_the_run(tmp_path: Path) -> None:
    res = run(tmp_path, "@pytest.mark.xfail(reason='later')\ndef test_x():\n    assert False\n")
    assert res.returncode == pytest.ExitCode.TESTS_FAILED


def test_a_run_without_skips_passes(tmp_path: Path) -> None:
    assert run(tmp_path, "def test_ok():\n    pass\n").returncode == 0
