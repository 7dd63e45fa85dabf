"""The course's cluster: one interface over three backends.

- ``local``: a real upstream control plane built from Go modules and started
  by kwokctl (no Docker needed; what CI and the project's machines run).
- ``kind``: Kubernetes in Docker, for learners who have Docker.
- ``existing``: any kubeconfig context you already have.

Notebooks never care which: they use the kubeconfig that ``up`` writes (see
:func:`helpers.kube.connect`). From a shell::

    python -m helpers.cluster up        # kind if Docker and kind are there, else local
    python -m helpers.cluster status
    python -m helpers.cluster down

This package imports nothing when it is imported. Where the course keeps its
files is :mod:`helpers.home`, outside this package, so that connecting to a
cluster (:mod:`helpers.kube`) never loads the backends, the Go build or kind.
Import ``helpers.cluster.backends`` for those.
"""
