"""requirements.txt (pip) and environment.yml (conda) must pin the same packages."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.pins import conda_pip_pins, pip_pins

ROOT = Path(__file__).resolve().parents[1]


def test_requirements_and_environment_pin_the_same_versions() -> None:
    assert pip_pins(), "requirements.txt pins nothing"
    assert conda_pip_pins() == pip_pins()


def test_environment_uses_the_python_the_project_declares() -> None:
    document = yaml.safe_load((ROOT / "environment.yml").read_text())
    pythons = [d for d in document["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert pythons == ["python=3.11"]
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
