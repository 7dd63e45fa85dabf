"""helpers/ is type-checked (mypy in make lint and make test): what it may leave unchecked.

Every ``# type: ignore`` names its error code and says why in a comment, on its line or in the
comment just above it, so that a reader can judge whether the reason still holds.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[a-z-, ]+\])?(.*)$")


def ignores() -> list[tuple[str, str | None, bool]]:
    """(where, error codes, whether a reason is given) for each ignore in helpers/."""
    found = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            match = IGNORE.search(line)
            if match is None:
                continue
            above = [text.strip() for text in lines[max(0, number - 4) : number - 1]]
            reason = match.group(2).strip().startswith("#") or any(
                text.startswith("#") and "ignore" in text for text in above
            )
            found.append((f"{path.relative_to(ROOT)}:{number}", match.group(1), reason))
    return found


def test_every_ignore_names_its_error_and_says_why() -> None:
    unexplained = [where for where, codes, reason in ignores() if codes is None or not reason]
    assert not unexplained, f"an ignore without its error code or its reason: {unexplained}"


def test_the_check_sees_the_ignores_there_are() -> None:
    assert 1 <= len(ignores()) <= 10  # seven when mypy came to make lint


def test_mypy_checks_helpers_and_warns_of_ignores_no_longer_needed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["helpers"]
    assert config["warn_unused_ignores"] is True
