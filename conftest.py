"""pytest's hooks for the whole repository: ``tests/`` and the notebooks under nbval alike."""

from __future__ import annotations

import pytest

from tests.session_guard import refuse_clusters_not_the_courses, require_sample_controllers_crd


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before the first test runs: is the cluster the tests would use the course's own?"""
    refuse_clusters_not_the_courses(items)


NOTEBOOKS_CHECKED = pytest.StashKey[dict[str, list[str]]]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a notebook's first cell: the Foo CRD its stored outputs were recorded on."""
    require_sample_controllers_crd(item, item.config.stash.setdefault(NOTEBOOKS_CHECKED, {}))
