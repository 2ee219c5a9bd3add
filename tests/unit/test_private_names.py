"""No module reaches into another module's private (`_underscore`) names.

A name shared between modules is public in the module that owns it (and listed in its
`__all__`); a leading underscore promises that only its own module uses it.
"""

from __future__ import annotations

import ast
import pathlib

import webhook

ROOT = pathlib.Path(webhook.__file__).parent


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _violations(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[str] = []
    modules: set[str] = set()  # local names bound to webhook modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("webhook"):
            for alias in node.names:
                if _is_private(alias.name):
                    out.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: from {node.module} import {alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("webhook"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            out.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_no_module_uses_another_modules_private_names() -> None:
    found = [v for path in sorted(ROOT.rglob("*.py")) for v in _violations(path)]
    assert not found, "private names used across modules:\n" + "\n".join(found)
