from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.cli.fake_api import FakeApi
from webhook.cli import app

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def ago(**kw: float) -> str:
    return (NOW - timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    def _run(api: FakeApi, *args: str, namespace: str = "default", stdin: str = "", monkeypatch: Any = None) -> Result:
        capsys.readouterr()
        code = app.run(list(args), connect=lambda kubeconfig, context: (api, namespace), clock=lambda: NOW)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run
