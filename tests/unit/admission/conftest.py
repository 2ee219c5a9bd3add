from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from webhook.admission.app import create_app
from webhook.admission.context import StaticLookups
from webhook.config import Configuration, parse

from .reviews import Driver


@pytest.fixture
def make_driver() -> Callable[..., Driver]:
    def make(config: Configuration | str | None = None, **lookups: Any) -> Driver:
        cfg = parse(config) if isinstance(config, str) else (config or Configuration())
        return Driver(create_app(cfg, StaticLookups(**lookups)))

    return make


@pytest.fixture
def driver(make_driver: Callable[..., Driver]) -> Driver:
    return make_driver()
