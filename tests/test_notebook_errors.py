"""In a notebook, a stopped cluster is two sentences, not a stack trace.

Runs a two-cell notebook in a real kernel (as JupyterLab would) against a
kubeconfig whose API server does not answer, and reads what the learner sees.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook


def test_stopped_cluster_shows_a_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "stopped",
            "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "stopped", "context": {"cluster": "c", "user": "u"}}],
        })
    )  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    notebook = new_notebook(cells=[
        new_code_cell("from helpers import kube, notebook\nnotebook.show_errors_as_sentences()"),
        new_code_cell("api = kube.connect()"),
    ])  # fmt: skip
    NotebookClient(notebook, timeout=60, kernel_name="python3", allow_errors=True).execute(
        cwd=os.getcwd()
    )
    (error,) = [o for o in notebook.cells[1].outputs if o.output_type == "error"]
    shown = "\n".join(error.traceback)
    assert error.ename == "CourseError"
    assert "The cluster of context 'stopped'" in shown
    assert "Next step: start the course's cluster with `make up`" in shown
    assert "Traceback" not in shown and len(error.traceback) <= 3
    nbformat.validate(notebook)
