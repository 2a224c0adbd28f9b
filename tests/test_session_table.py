"""The Streamable HTTP server's session table (issue 22): expiry and eviction by last-use
order, checked against a brute-force model of the same rules.

``HttpApp._make_room`` runs for real over a :class:`SessionTable` of light sessions (an
engine with no requests; ``active`` says whether one is busy) on a fake clock; the model
keeps a plain list and answers every question by looking at all of it, the way the server did
before the table (``min`` over the idle sessions by ``last_seen``). After every step of a
long seeded random run (creations from a few owners, one of them unhashable, uses, sessions
turning busy and idle with and without a request ending, deletes, time passing beyond the
idle timeout) the table's order overall and per owner, every ``last_seen``, and each
``_make_room`` outcome (refusal, expired and evicted sessions) must equal the model's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from typedmcp.transports.http_server import HttpApp
from typedmcp.transports.http_shared import HttpSession, SessionTable

IDLE_TIMEOUT = 100.0
OWNERS: list[Any] = ["10.0.0.1", "10.0.0.2", "2001:db8::/64", None, {"sub": "alice"}]


class Clock:
    """A clock the test moves (never backwards)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class NoRequests:
    """What ``HttpSession.busy`` reads of an engine."""

    _incoming: dict[Any, Any] = field(default_factory=dict)


def light_session(session_id: str, owner: Any) -> HttpSession:
    session = HttpSession(session_id, None, NoRequests(), None)  # type: ignore[arg-type]
    session.owner = owner
    return session


@dataclass
class Entry:
    """The model's view of one session: when it was last used, in what order, and by whom."""

    id: str
    owner: Any
    busy: bool = False
    last_seen: float = 0.0
    tick: int = 0  # breaks ties between sessions used at the same time, in the order of use


class Model:
    """The rules, answered by brute force over every session (the server before the table).

    A session is used when added and when a request of it ends; a scan for expired or
    evictable sessions counts each busy session it passes (older than what it was looking
    for) as used at that moment."""

    def __init__(self, clock: Clock, max_sessions: int, per_client: int) -> None:
        self.clock, self.max_sessions, self.per_client = clock, max_sessions, per_client
        self.entries: dict[str, Entry] = {}
        self.ticks = 0

    def use(self, entry: Entry) -> None:
        self.ticks += 1
        entry.last_seen, entry.tick = self.clock.now, self.ticks

    def order(self, owner: Any = ..., *, only: list[Entry] | None = None) -> list[Entry]:
        pool = only if only is not None else list(self.entries.values())
        if owner is not ...:
            pool = [entry for entry in pool if entry.owner == owner]
        return sorted(pool, key=lambda entry: (entry.last_seen, entry.tick))

    def _passed_busy(self, busy: list[Entry]) -> None:
        for entry in self.order(only=busy):  # (in their old order)
            self.use(entry)

    def _victim(self, pool: list[Entry]) -> Entry | None:
        idle = [entry for entry in pool if not entry.busy]
        victim = min(idle, key=lambda entry: (entry.last_seen, entry.tick)) if idle else None
        passed = [entry for entry in pool if entry.busy and (
            victim is None or (entry.last_seen, entry.tick) < (victim.last_seen, victim.tick))]
        self._passed_busy(passed)
        return victim

    def make_room(self, owner: Any) -> tuple[int | None, set[str]]:
        """The refusal status (None: room made) and the sessions ended to make room."""
        now = self.clock.now
        old = [entry for entry in self.entries.values() if now - entry.last_seen > IDLE_TIMEOUT]
        ended = {entry.id for entry in old if not entry.busy}
        for session_id in ended:
            del self.entries[session_id]
        self._passed_busy([entry for entry in old if entry.busy])
        while len(own := [e for e in self.entries.values() if e.owner == owner]) >= self.per_client:
            victim = self._victim(own)
            if victim is None:
                return 429, ended
            del self.entries[victim.id]
            ended.add(victim.id)
        while len(self.entries) >= self.max_sessions:
            victim = self._victim(list(self.entries.values()))
            if victim is None:
                return 503, ended
            del self.entries[victim.id]
            ended.add(victim.id)
        return None, ended


def light_app(clock: Clock, max_sessions: int, per_client: int) -> HttpApp:
    """An ``HttpApp`` whose sessions are light ones (ending one only drops it)."""
    app = HttpApp(lambda: None, max_sessions=max_sessions,  # type: ignore[arg-type,return-value]
                  max_sessions_per_client=per_client, session_idle_timeout=IDLE_TIMEOUT)
    app.sessions = SessionTable(clock)
    app._end = lambda session: app.sessions.pop(session.id, None)  # type: ignore[method-assign]
    return app


def assert_same(app: HttpApp, model: Model, step: int) -> None:
    table = app.sessions
    expected = model.order()
    assert list(table) == [entry.id for entry in expected], f"step {step}: order overall"
    for entry in expected:
        assert table[entry.id].last_seen == entry.last_seen, f"step {step}: last_seen of {entry.id}"
        assert table[entry.id].busy() == entry.busy
    for owner in OWNERS:
        mine = [session.id for session in table.owned_by(owner)]
        assert mine == [entry.id for entry in model.order(owner)], f"step {step}: order of {owner!r}"
        assert table.count_of(owner) == len(mine)


#: Phases of the random run, 200 steps each, in turn: how often each action comes (new
#: session, request served, turns busy, turns idle, DELETE) and how far the clock moves.
PHASES: list[tuple[tuple[int, ...], tuple[float, ...]]] = [
    ((40, 25, 10, 10, 5), (0.0, 0.5, 1.0, 3.0)),  # steady use
    ((40, 5, 45, 5, 5), (0.0, 0.5, 1.0)),  # sessions pile up busy: the caps refuse
    ((30, 20, 5, 40, 5), (0.0, 1.0, 10.0, 40.0, 150.0)),  # quiet: sessions expire
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("max_sessions", "per_client"), [(12, 5), (14, 14), (8, 3)])
def test_expiry_and_eviction_follow_last_use_as_brute_force_does(
    seed: int, max_sessions: int, per_client: int
) -> None:
    rng = random.Random(seed)
    clock = Clock()
    app = light_app(clock, max_sessions, per_client)
    model = Model(clock, max_sessions, per_client)
    seen: dict[Any, int] = {}  # refusal status (None: room) / "expired" / "evicted" -> how often
    for step in range(1800):
        weights, jumps = PHASES[step // 200 % len(PHASES)]
        clock.now += rng.choice(jumps)  # (a jump of 0: ties)
        live = list(model.entries.values())
        action = rng.choices(("new", "served", "busy", "idle", "delete"), weights)[0]
        if action == "new" or not live:  # as _initialize: room first, then the session added
            owner = rng.choice(OWNERS)
            expired_before = {e.id for e in live if clock.now - e.last_seen > IDLE_TIMEOUT and not e.busy}
            status, ended = model.make_room(owner)
            before = set(app.sessions)
            refused = app._make_room(owner)
            assert (refused[0] if refused else None) == status, f"step {step}: refusal"
            assert before - set(app.sessions) == ended, f"step {step}: sessions ended"
            for outcome, happened in ((status, True), ("expired", expired_before),
                                      ("evicted", ended - expired_before)):
                if happened:
                    seen[outcome] = seen.get(outcome, 0) + 1
            if status is None:
                session_id = f"s{step}"
                app.sessions[session_id] = light_session(session_id, owner)
                entry = model.entries[session_id] = Entry(session_id, owner)
                model.use(entry)
        else:
            entry = rng.choice(live)
            session = app.sessions[entry.id]
            if action == "served":  # a request of it ended: used now
                app.sessions.touch(session)
                model.use(entry)
            elif action == "busy":  # a GET stream opens, or a handler starts
                session.active, entry.busy = 1, True
            elif action == "idle":  # it ends with its request (used now) or silently (a handler)
                session.active, entry.busy = 0, False
                if rng.random() < 0.5:
                    app.sessions.touch(session)
                    model.use(entry)
            else:
                del app.sessions[entry.id]
                del model.entries[entry.id]
        assert_same(app, model, step)
    # the run went through every case: room, expiry, eviction, the refusals the caps allow
    refusals = {503} if per_client >= max_sessions else {429, 503}
    assert {None, "expired", "evicted", *refusals} <= set(seen), seen


def test_a_session_added_again_under_its_id_is_filed_once() -> None:
    table = SessionTable(Clock())
    first, second = light_session("a", "x"), light_session("a", "y")
    table["a"] = first
    table["a"] = second
    assert list(table) == ["a"] and table["a"] is second
    assert table.count_of("x") == 0 and table.count_of("y") == 1


def test_touching_a_session_no_longer_in_the_table_leaves_the_table_alone() -> None:
    clock = Clock()
    table = SessionTable(clock)
    gone, kept = light_session("gone", "x"), light_session("kept", "x")
    table["gone"], table["kept"] = gone, kept
    table.pop("gone")
    clock.now += 5
    table.touch(gone)  # (a request of it ends after the session was ended)
    assert list(table) == ["kept"] and gone.last_seen == clock.now
