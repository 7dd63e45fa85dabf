"""The course as a book on the web: a static site built from the chapters' stored outputs.

``python -m book.build`` (``make book``) stages the chapters, the README's introduction, the
facilitator guide and the benchmark results as Sphinx sources (``book.stage``), and builds them
with myst-nb and the Furo theme (``book/conf.py``). Nothing is executed: every output on the site
is the one stored in the notebook, which nbval checks against a real run.
"""
