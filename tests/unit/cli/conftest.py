from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.cli.fake_api import NOW, FakeApi, Result
from webhook.cli import app


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    def _run(api: FakeApi, *args: str, namespace: str = "default", stdin: str = "", monkeypatch: Any = None) -> Result:
        capsys.readouterr()
        code = app.run(list(args), connect=lambda kubeconfig, context: (api, namespace), clock=lambda: NOW)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run
