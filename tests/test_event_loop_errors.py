"""The serving core's Loop refuses a time in the past exactly as the engine's EventLoop does, by
every way of scheduling (at, push, stream): the same error type and message, an int64 time that
wrapped (negative) included. Loop raises through kvviz.engine.refuse_past, the engine's own check."""
import pytest

from kvviz.engine import EventLoop
from kvviz.serving.event_loop import Loop


def _error(schedule, loop):
    loop.now = 10
    with pytest.raises((ValueError, OverflowError)) as e:
        schedule(loop)
    return type(e.value), str(e.value)


@pytest.mark.parametrize("t", [5, -3])
def test_loop_refuses_the_past_as_the_engine_does(t):
    want = _error(lambda loop: loop.at(t, print), EventLoop())
    assert want[0] is (ValueError if t >= 0 else OverflowError)
    for schedule in (lambda loop: loop.at(t, print), lambda loop: loop.push(t, 0, print, ()),
                     lambda loop: loop.stream([t], print, [()])):
        assert _error(schedule, Loop()) == want


def test_loop_at_schedules_as_the_engine_does():
    runs = []
    for cls in (EventLoop, Loop):
        loop, log = cls(), []
        loop.at(7, log.append, "b", priority=1)
        loop.at(7, log.append, "a")
        loop.at(3, log.append, "c")
        loop.run()
        runs.append((log, loop.now, loop.processed))
    assert runs[0] == runs[1] == (["c", "a", "b"], 7, 3)
