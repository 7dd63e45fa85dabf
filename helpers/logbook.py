"""The course's log lines in memory, for cells to read and wait on, not on a cell's output.

The controllers log from background threads; printed, their lines would land under
whichever cell happens to run. :meth:`LogBook.installed` gives the ``helpers``
loggers one :class:`LogBook` per process instead, and a cell waits for a line
(:meth:`LogBook.wait_for`) rather than for a fixed time. Chapters 06a, 06b and 07
use it (through chapter 06's bench, or directly).
"""

from __future__ import annotations

import logging
import threading


class LogBook(logging.Handler):
    """Keeps the messages of the ``helpers`` loggers in memory, for cells to read and wait on."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.messages.append(record.getMessage())
            self.changed.notify_all()

    def wait_for(self, text: str, after: int = 0, timeout: float = 30) -> bool:
        """Block until a message containing ``text`` is logged (at index ``after`` or later)."""
        with self.changed:
            found = lambda: any(text in m for m in self.messages[after:])  # noqa: E731
            return self.changed.wait_for(found, timeout)

    @classmethod
    def installed(cls) -> LogBook:
        """A LogBook that the ``helpers`` loggers write into instead of the cells' stderr
        (the controllers log from background threads); one per process."""
        logger = logging.getLogger("helpers")
        book = next((h for h in logger.handlers if isinstance(h, cls)), None) or cls()
        if book not in logger.handlers:
            logger.addHandler(book)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        return book
