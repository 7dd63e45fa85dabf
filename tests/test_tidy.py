"""helpers.tidy keeps the widget models an output shows, and what they refer to, and no more."""

from __future__ import annotations

from typing import Any

from helpers.tidy import WIDGET_STATE, WIDGET_VIEW, needed_models, prune_widget_state


def notebook(shown: list[str], state: dict[str, Any]) -> dict[str, Any]:
    outputs = [
        {"output_type": "display_data", "data": {WIDGET_VIEW: {"model_id": m}}} for m in shown
    ]
    return {
        "cells": [{"cell_type": "code", "outputs": outputs, "source": ""}],
        "metadata": {"widgets": {WIDGET_STATE: {"state": state, "version_major": 2}}},
    }


def model(*refs: str) -> dict[str, Any]:
    return {"model_name": "X", "state": {"children": [f"IPY_MODEL_{r}" for r in refs]}}


def test_a_shown_model_keeps_what_it_refers_to_and_stale_frames_go() -> None:
    nb = notebook(
        ["a1"], {"a1": model("b2"), "b2": model("c3"), "c3": model(), "dead": model("c3")}
    )
    assert needed_models(nb) == {"a1", "b2", "c3"}
    assert prune_widget_state(nb) == 1
    assert set(nb["metadata"]["widgets"][WIDGET_STATE]["state"]) == {"a1", "b2", "c3"}


def test_nothing_shown_drops_the_widget_metadata() -> None:
    nb = notebook([], {"frame": model(), "other": model()})
    assert prune_widget_state(nb) == 2
    assert "widgets" not in nb["metadata"]


def test_the_stored_kernel_is_named_as_the_installed_one_names_itself() -> None:
    """JupyterLab rewrites a differing kernelspec when the kernel connects, marking the chapter
    modified: tidy stores the installed kernel's, and says whether that changed anything."""
    from helpers.tidy import installed_kernelspec, name_the_kernel

    spec = installed_kernelspec()
    stored = {"metadata": {"kernelspec": {**spec, "display_name": "Python 3"}}}
    assert name_the_kernel(stored, spec) is True
    assert stored["metadata"]["kernelspec"] == spec
    assert name_the_kernel(stored, spec) is False
