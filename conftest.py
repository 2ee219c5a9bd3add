"""Repository-wide pytest rules (tests/ and e2e/ alike)."""

pytest_plugins = ["tests.no_skips"]
