"""Sphinx's settings for the book (``python -m book.build`` passes this folder as ``-c``).

The sources are the staging folder ``book.stage`` writes, not the repository. Everything the
pages load comes from the packages pinned in requirements.txt (Sphinx, myst-nb, Furo) and from
``_static/``: no script, style, font or image is fetched from another site, so the book reads
the same offline.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for book.extension

project = "Controllers from Scratch"
author = "the Controllers from Scratch authors"
copyright = "the Controllers from Scratch authors"
language = "en"

extensions = ["myst_nb", "book.extension"]
root_doc = "index"

# Publish the stored outputs, exactly as nbval checks them: never run a cell.
nb_execution_mode = "off"
# Live widgets are replaced by a snapshot of their values (book.stage): no widget script, which
# would come from a CDN.
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
nb_merge_streams = True  # one block per cell for its printed lines, as in JupyterLab
nb_code_prompt_show = "Show the collapsed code"
nb_code_prompt_hide = "Hide the collapsed code"
myst_heading_anchors = 3  # links to a chapter's section: 03a_informer.ipynb#resync

html_theme = "furo"
html_title = "Controllers from Scratch"
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_copy_source = False  # the staged copies are no use to a reader; the notebooks are in the repo
html_show_sourcelink = False
html_last_updated_fmt = None
html_permalinks_icon = "#"
