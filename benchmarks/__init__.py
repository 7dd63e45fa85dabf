"""The course's machinery measured beside the official Python client, client-go, sample-controller.

Measurements, not tests: ``benchmarks/run_all`` runs them all in one go on the
course's cluster and writes ``benchmarks/results.json`` (every row, and what
ran: the command, the commit, the versions, the machine) and, from it, the
measured part of ``benchmarks/RESULTS.md`` and the benchmark paragraph of
README.md. Run the modules from the repository's root, as packages:
``.venv/bin/python -m benchmarks.informer_bench ...``.

The Go side lives in ``benchmarks/go`` and is built into the course's binary
cache by :mod:`helpers.cluster.gobuild`. Nothing here imports from ``tests/``.
"""
