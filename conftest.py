"""pytest's hooks for the whole repository: ``tests/`` and the notebooks under nbval alike."""

from __future__ import annotations

import pytest

from tests.session_guard import refuse_clusters_not_the_courses


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before the first test runs: is the cluster the tests would use the course's own?"""
    refuse_clusters_not_the_courses(items)
