"""pytest's hooks for the whole repository: ``tests/`` and the notebooks under nbval alike."""

from __future__ import annotations

import pytest

from tests.session_guard import (
    note_the_foo_crd,
    refuse_clusters_not_the_courses,
    require_sample_controllers_crd,
    require_the_foo_crd_as_found,
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before the first test runs: is the cluster the tests would use the course's own?"""
    refuse_clusters_not_the_courses(items)


NOTEBOOKS_CHECKED = pytest.StashKey[dict[str, list[str]]]()
CRD_AS_FOUND = pytest.StashKey[dict[str, list[str]]]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a notebook's first cell: the Foo CRD its stored outputs were recorded on. Before a
    test module's first cluster test: the Foo CRD as it found it."""
    require_sample_controllers_crd(item, item.config.stash.setdefault(NOTEBOOKS_CHECKED, {}))
    note_the_foo_crd(item, item.config.stash.setdefault(CRD_AS_FOUND, {}))


@pytest.hookimpl(trylast=True)  # after pytest's own, which runs the fixtures' teardowns
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a test module's last test (and its fixtures' teardowns): the Foo CRD as the
    module found it."""
    require_the_foo_crd_as_found(item, nextitem, item.config.stash.setdefault(CRD_AS_FOUND, {}))
