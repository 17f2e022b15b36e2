"""Loop.sooner (the cluster's batchers cut a decode segment short with it): moving a pending event
earlier runs the events as pushing the new one and never scheduling the old would, with the
same tie-breaking (time, priority, then the order scheduled)."""
import random

import pytest

from kvviz.serving.event_loop import Loop


def _log_of(moves: bool, seed: int) -> list[tuple[int, str]]:
    """Random events, some moved earlier before the loop runs and some while it runs; `moves`
    false schedules each moved event's final time directly and drops the old (the reference)."""
    rng = random.Random(seed)
    loop, log = Loop(), []

    def ev(name: str) -> None:
        log.append((loop.now, name))

    plan = []  # (time, priority, name, moved to or None)
    for i in range(60):
        t = rng.randrange(0, 50)
        plan.append((t, rng.randrange(3), f"e{i}", rng.randrange(0, t + 1) if rng.random() < 0.3 else None))
    for t, p, name, to in plan:
        if to is None:
            loop.push(t, p, ev, (name,))
        elif moves:
            e = loop.push_entry(t, p, ev, (name + "-old",))
            loop.sooner(e, to, p, ev, (name,))
        else:
            loop._seq += 1  # the old entry's seq, taken as push_entry took it
            loop.push(to, p, ev, (name,))
    loop.run()
    return log


@pytest.mark.parametrize("seed", range(20))
def test_sooner_runs_as_the_new_event_alone(seed):
    got = _log_of(True, seed)
    assert got == _log_of(False, seed)
    assert not any(name.endswith("-old") for _, name in got)
    assert [t for t, _ in got] == sorted(t for t, _ in got)


def test_sooner_moves_a_pending_event_while_the_loop_runs():
    loop, log = Loop(), []
    handle = []

    def cut() -> None:  # at 5: the event pending at 20 moves to 8, before the one at 10
        handle[0] = loop.sooner(handle[0], 8, 1, log.append, ("moved",))

    handle.append(loop.push_entry(20, 1, log.append, ("old",)))
    loop.push(5, 0, cut, ())
    loop.push(10, 0, log.append, ("at 10",))
    loop.run()
    assert log == ["moved", "at 10"] and loop.processed == 3


def test_sooner_refuses_later_and_past_times_and_events_not_pending():
    loop = Loop()
    e = loop.push_entry(10, 1, print, ())
    with pytest.raises(ValueError, match="earlier"):
        loop.sooner(e, 11, 1, print, ())
    with pytest.raises(ValueError, match="earlier"):
        loop.sooner(e, 10, 2, print, ())
    loop.now = 5
    with pytest.raises(ValueError, match="past"):
        loop.sooner(e, 4, 1, print, ())
    with pytest.raises(ValueError):  # not pending
        loop.sooner((10, 1, 99, print, ()), 9, 1, print, ())
