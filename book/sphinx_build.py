"""Sphinx's command line, without one slow import the book has no use for.

jsonschema checks the "iri" string format with ``rfc3987_syntax`` when that is installed (the
course's JupyterLab brings it), and importing it compiles 39 grammars: about 3 s of CPU, a
sixth of the whole build. The book reaches jsonschema only through nbformat, which myst-nb reads
notebooks with and which checks no string formats, so this process goes without it (an import of
it raises ImportError, which jsonschema expects when the package is missing).
"""

from __future__ import annotations

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

from sphinx.cmd.build import main  # noqa: E402 (after the line above, on purpose)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
