"""requirements.txt (pip) and environment.yml (conda) must pin the same packages."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def pip_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def conda_pip_pins() -> dict[str, str]:
    document = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = {}
    for dependency in document["dependencies"]:
        if isinstance(dependency, dict) and "pip" in dependency:
            for line in dependency["pip"]:
                if "==" in line:
                    name, version = line.split("==")
                    pins[name.lower()] = version
    return pins


def test_requirements_and_environment_pin_the_same_versions() -> None:
    assert pip_pins(), "requirements.txt pins nothing"
    assert conda_pip_pins() == pip_pins()


def test_environment_uses_the_python_the_project_declares() -> None:
    document = yaml.safe_load((ROOT / "environment.yml").read_text())
    pythons = [d for d in document["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert pythons == ["python=3.11"]
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
