"""Two tiny tests for tests/test_pytest_file.py to write into a file and run (not collected here:
the file's name does not start with test_)."""


def test_sample_that_passes() -> None:
    assert sum([1, 2]) == 3


def test_sample_that_fails() -> None:
    assert sum([1, 2]) == 4, "a sample failure"
