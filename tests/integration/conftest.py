"""The session's local control plane (e2e/cluster.py), shared by the integration tests that need one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Same import path as e2e/stack.py, so one session shares one copy of the module.
E2E_DIR = Path(__file__).resolve().parents[2] / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

from cluster import Cluster  # noqa: E402


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for the session, in a temp dir so a developer's `.run/cluster` is left alone."""
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    c.up()  # raises ClusterError naming the failed step -> every test using this errors out
    try:
        yield c
    finally:
        c.down()
