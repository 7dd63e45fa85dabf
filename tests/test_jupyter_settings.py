"""The course's Jupyter settings (jupyter/) are found where `make lab` points Jupyter.

Read through the same loaders JupyterLab and Jupyter Server use, so a file in the wrong
folder, a wrong key or a value their schemas reject fails here, not in front of a learner.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ROOT / "jupyter"


def test_make_lab_puts_the_course_settings_first() -> None:
    recipe = (ROOT / "Makefile").read_text().split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r'JUPYTER_CONFIG_PATH="\$\(CURDIR\)/jupyter', recipe), recipe


def test_the_news_pop_up_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyterlab_server.settings_utils import _get_overrides

    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(SETTINGS))
    overrides, error = _get_overrides(str(SETTINGS / "no-app-settings-here"))
    assert error == ""
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}


def test_kernels_get_curve_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_server.serverapp import ServerApp
    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager

    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(SETTINGS))
    app = ServerApp()
    app.load_config_file()
    manager = MappingKernelManager(config=app.config)
    assert manager.transport_encryption == "auto"


def test_notebooks_are_handed_out_as_the_kernel_reports_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A chapter stored with another kernel name or Python version reaches JupyterLab with the
    installed kernel's and this Python's (so JupyterLab, writing them when the kernel connects,
    changes nothing and does not mark it modified); the file on disk is left as it was."""
    import asyncio
    import json
    import platform

    from jupyter_server.serverapp import ServerApp

    from helpers.tidy import installed_kernelspec

    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(SETTINGS))
    app = ServerApp()
    app.load_config_file()
    manager_class = app.config.ServerApp.contents_manager_class
    assert manager_class.__name__ == "CourseContentsManager"
    stored = {
        "cells": [],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.12.0"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(stored)
    (tmp_path / "chapter.ipynb").write_text(text)
    manager = manager_class(root_dir=str(tmp_path))
    model = asyncio.run(manager.get("chapter.ipynb"))
    metadata = model["content"]["metadata"]
    assert metadata["kernelspec"] == installed_kernelspec()
    assert metadata["language_info"]["version"] == platform.python_version()
    assert (tmp_path / "chapter.ipynb").read_text() == text


def test_chapters_store_the_installed_kernels_name() -> None:
    """What `python -m helpers.tidy` writes: the kernelspec JupyterLab would write on opening."""
    import json

    from helpers.tidy import installed_kernelspec

    expected = installed_kernelspec()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")):
        stored = json.loads(path.read_text())["metadata"]["kernelspec"]
        assert stored == expected, f"{path.name}: run `python -m helpers.tidy {path}`"
