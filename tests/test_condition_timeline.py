"""The condition recorder (chapter 10's first picture): what it writes down, what it draws."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from helpers.condition_timeline import ConditionRecorder, draw_conditions, times_kept, transitions


class Informer:
    """Stands in for a SharedInformer: keeps the handler the recorder registers."""

    def add_event_handler(self, **callbacks: Any) -> None:
        self.callbacks = callbacks


def foo(generation: int, ready: tuple[str, str, str], time: str) -> dict[str, Any]:
    status, reason, message = ready
    ready_condition = {"type": "Ready", "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": time, "observedGeneration": generation}  # fmt: skip
    return {"metadata": {"name": "web", "generation": generation},
            "status": {"conditions": [ready_condition]}}  # fmt: skip


@pytest.fixture
def recorded() -> tuple[ConditionRecorder, Informer]:
    now = iter([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2])
    informer = Informer()
    recorder = ConditionRecorder(informer, clock=lambda: next(now))  # type: ignore[arg-type]
    add, update = informer.callbacks["on_add"], informer.callbacks["on_update"]
    recorder.mark("web asks for 2")
    add(foo(1, ("False", "ReplicasUnavailable", "0 of 2"), "t1"), True)
    update(None, foo(1, ("False", "ReplicasUnavailable", "0 of 2"), "t1"))  # nothing new
    update(None, foo(1, ("False", "ReplicasUnavailable", "1 of 2"), "t1"))
    update(None, foo(1, ("True", "Available", "2 of 2"), "t2"))
    return recorder, informer


def test_only_changes_are_written_down(recorded: tuple[ConditionRecorder, Informer]) -> None:
    recorder, _ = recorded
    changes = recorder.of("web", "Ready")
    assert [(seen.status, seen.message) for seen in changes] == [
        ("False", "0 of 2"), ("False", "1 of 2"), ("True", "2 of 2")]  # fmt: skip
    assert transitions(changes) == 2 and times_kept(changes)
    assert recorder.last("web", "Ready").status == "True"
    assert recorder.last("web", "Missing") is None


def test_a_message_that_moved_the_time_alone_is_caught() -> None:
    informer = Informer()
    recorder = ConditionRecorder(informer)  # type: ignore[arg-type]
    informer.callbacks["on_add"](foo(1, ("False", "Waiting", "a"), "t1"), True)
    informer.callbacks["on_update"](None, foo(1, ("False", "Waiting", "b"), "t9"))
    assert not times_kept(recorder.of("web", "Ready"))


def test_wait_for_returns_when_the_statuses_arrive_for_the_generation(
    recorded: tuple[ConditionRecorder, Informer],
) -> None:
    recorder, informer = recorded
    recorder.wait_for("web", {"Ready": "True"}, generation=1, timeout=1)
    with pytest.raises(TimeoutError, match="did not get to"):
        recorder.wait_for("web", {"Ready": "True"}, generation=2, timeout=0.05)
    later = threading.Timer(
        0.05,
        lambda: informer.callbacks["on_update"](None, foo(2, ("True", "Available", "4"), "t3")),
    )
    later.start()
    recorder.wait_for("web", {"Ready": "True"}, generation=2, timeout=5)
    later.join()


def test_the_picture_says_what_it_drew(recorded: tuple[ConditionRecorder, Informer]) -> None:
    recorder, _ = recorded
    picture = draw_conditions(recorder, "web", types=("Ready",))
    assert picture._repr_png_().startswith(b"\x89PNG")
    title = picture.figure.axes[0].get_title(loc="left")
    assert "2 status changes" in title and "1 change of reason or message alone" in title
    assert repr(picture).startswith("<Figure size 820x")
