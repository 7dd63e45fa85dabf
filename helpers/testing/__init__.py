"""Testing a controller: chapter 09a's tools (chapter 09b's drills use them too).

- ``recording``: the sync handler alone, as sample-controller's ``controller_test.go``
  tests it: caches filled by hand, clients that record (built in chapter 09a);
- ``on_cluster``: the whole controller against a real API server, waited on
  without sleeps (built in chapter 09a);
- ``pytest_file``: test functions written to a file, and pytest run on it.

The faults a test makes on purpose are in :mod:`helpers.faults`.
"""
