"""A pytest plugin: any skipped or xfailed test fails the run.

A test that needs the control plane, a browser or a real install must fail loudly when it cannot
have it; a skip would let CI go green having tested nothing. Loaded for every run in the repository
by the root conftest.py, so `make test`, `make e2e-real` and `make e2e-kind` all obey it.
"""

from __future__ import annotations

import pytest

_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _skipped:
        terminalreporter.write_line(
            f"FAILED: {len(_skipped)} test(s) skipped or xfailed; this project allows neither: {', '.join(_skipped)}",
            red=True,
        )
