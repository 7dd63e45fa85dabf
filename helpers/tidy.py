"""Keep a stored chapter as JupyterLab would keep it: only the widget state it still shows, and
the kernel it runs on named as that kernel names itself.

Executing a chapter (nbconvert, JupyterLab's save) stores the state of every widget
model the kernel made in the notebook's metadata, including each frame of a live
plot that has since been replaced by a static PNG. That state is stale: no output
refers to it, yet it makes the file hundreds of kilobytes larger and every diff
noisy. What an output still shows (a slider, a button) needs its model, and the
models that model names (layout, style, children), to render when the notebook is
opened; everything else goes.

When a kernel connects, JupyterLab writes the kernel's own name (``kernelspec``) and language
(``language_info``) into the notebook's metadata. A chapter stored with another
``display_name`` ("Python 3" where ipykernel says "Python 3 (ipykernel)") is therefore modified
the moment it opens, and a learner who closes it is asked to save changes they never made. The
stored kernelspec is the installed one; ``jupyter/jupyter_server_config.py`` also gives
``language_info`` the running Python's version as a notebook is opened, since a learner's
Python may be another release than the one the outputs were stored with.

    python -m helpers.tidy notebooks/04_workqueue.ipynb ...   # default: every chapter
"""

from __future__ import annotations

import argparse
import json
import platform
import re
from pathlib import Path
from typing import Any

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
REFERENCE = re.compile(r"IPY_MODEL_([0-9a-f]+)")


def shown_models(notebook: dict[str, Any]) -> set[str]:
    """The model ids that outputs display."""
    return {
        output["data"][WIDGET_VIEW]["model_id"]
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
        if WIDGET_VIEW in (output.get("data") or {})
    }


def needed_models(notebook: dict[str, Any]) -> set[str]:
    """The shown models and every model they refer to, directly or not."""
    state = _state(notebook)
    needed: set[str] = set()
    todo = list(shown_models(notebook))
    while todo:
        model = todo.pop()
        if model in needed or model not in state:
            continue
        needed.add(model)
        todo.extend(REFERENCE.findall(json.dumps(state[model])))
    return needed


def prune_widget_state(notebook: dict[str, Any]) -> int:
    """Drop the models no output needs (all widget metadata if none); returns how many went."""
    state = _state(notebook)
    needed = needed_models(notebook)
    dropped = len(state) - len(needed)
    if not needed:
        notebook["metadata"].pop("widgets", None)
        return dropped
    for model in list(state):
        if model not in needed:
            del state[model]
    return dropped


def installed_kernelspec(name: str = "python3") -> dict[str, str]:
    """The kernelspec metadata JupyterLab writes for the installed kernel ``name``."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(name)
    return {"display_name": spec.display_name, "language": spec.language, "name": name}


def name_the_kernel(notebook: dict[str, Any], kernelspec: dict[str, str]) -> bool:
    """Store ``kernelspec`` as the notebook's; whether that changed it."""
    metadata = notebook.setdefault("metadata", {})
    changed = metadata.get("kernelspec") != kernelspec
    metadata["kernelspec"] = dict(kernelspec)
    return changed


def as_this_kernel_reports(notebook: dict[str, Any], kernelspec: dict[str, str]) -> bool:
    """The installed kernel's name and this Python's version in ``notebook``'s metadata, as
    JupyterLab would write them once the kernel (running on this Python) connects; whether
    that changed anything."""
    changed = name_the_kernel(notebook, kernelspec)
    language = notebook["metadata"].get("language_info")
    if isinstance(language, dict) and language.get("version") != platform.python_version():
        language["version"] = platform.python_version()
        changed = True
    return changed


def _state(notebook: dict[str, Any]) -> dict[str, Any]:
    widgets = notebook.get("metadata", {}).get("widgets", {})
    return (widgets.get(WIDGET_STATE) or {}).get("state", {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.tidy", description=__doc__)
    root = Path(__file__).resolve().parents[1]
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((root / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
    kernelspec = installed_kernelspec()
    for path in paths:
        notebook = json.loads(path.read_text())
        dropped = prune_widget_state(notebook)
        renamed = name_the_kernel(notebook, kernelspec)
        if dropped or renamed:
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        if dropped:
            print(f"{path.name}: dropped {dropped} stale widget model(s)")
        if renamed:
            print(f"{path.name}: the kernel is now named as it names itself")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
