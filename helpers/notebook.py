"""Notebook conveniences: errors shown as sentences, not stack traces.

A learner whose cluster is stopped should read "The cluster of context 'X'
does not answer. Next step: make up", not forty lines of urllib3 internals.
:func:`show_errors_as_sentences` asks IPython to render the course's own
errors (and the API server's error responses) that way. Any other exception
keeps its full traceback: those are bugs, and a traceback is what finds them.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from .apierrors import explain
from .errors import CourseError


def sentence_for(error: BaseException) -> str:
    """The two lines a learner sees for an error the course understands."""
    if isinstance(error, CourseError):
        return f"{error.problem}\nNext step: {error.next_step}"
    if isinstance(error, ApiException):
        return f"HTTP {error.status} from the API server: {explain(error)}"
    return str(error)


def show_errors_as_sentences(shell: Any | None = None) -> None:
    """Render CourseError and ApiException in this IPython session as short sentences."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:  # plain Python: nothing to configure
        return

    def handler(
        shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        lines = sentence_for(value).splitlines()
        lines[0] = f"{etype.__name__}: {lines[0]}"
        # _showtraceback is how IPython publishes an error with a traceback we
        # choose: the cell is marked failed and shows just these lines.
        show = getattr(shell, "_showtraceback", None)
        if show is not None:
            show(etype, value, lines)
        else:
            print("\n".join(lines))
        return lines

    shell.set_custom_exc((CourseError, ApiException), handler)
