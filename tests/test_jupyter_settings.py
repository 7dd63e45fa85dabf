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
