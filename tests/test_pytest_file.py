"""helpers.testing.pytest_file: notebook test functions become a file that pytest runs."""

from __future__ import annotations

from pathlib import Path

from helpers.testing.pytest_file import HEADER, run_pytest, write_pytest_file
from tests import pytest_file_samples as samples


def test_the_file_holds_the_header_and_the_functions_and_pytest_runs_it(tmp_path: Path) -> None:
    path = tmp_path / "mine" / "test_written.py"

    write_pytest_file(path, [samples.test_sample_that_passes, samples.test_sample_that_fails])
    result = run_pytest(path)

    text = path.read_text()
    assert text.startswith(HEADER)
    assert "def test_sample_that_passes" in text and "def test_sample_that_fails" in text
    assert (result.passed, result.failed, result.exit_code) == (1, 1, 1), result.output
    assert "a sample failure" in result.output
    assert not (path.parent / ".pytest_cache").exists(), "the run left a cache folder"


def test_a_file_of_passing_tests_exits_0(tmp_path: Path) -> None:
    path = write_pytest_file(tmp_path / "test_ok.py", [samples.test_sample_that_passes])

    result = run_pytest(path)

    assert (result.passed, result.failed, result.exit_code) == (1, 0, 0), result.output
