"""Every module of the package declares its public names, and each declared name exists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import webhook


def _modules() -> list[str]:
    return sorted(
        m.name for m in pkgutil.walk_packages(webhook.__path__, "webhook.") if not m.name.endswith("__main__")
    )


@pytest.mark.parametrize("name", _modules())
def test_all_lists_existing_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        assert module.__name__.count(".") <= 2 and hasattr(module, "__path__"), f"{name} has no __all__"
        return
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"
