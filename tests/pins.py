"""The packages requirements.txt and environment.yml pin: a support module of the tests
(test_environment_files, test_zero_to_jupyterhub), not a test module."""

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
