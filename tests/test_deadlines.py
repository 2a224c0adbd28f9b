"""Request time limits share one timer per session (``session.Deadlines``)."""

from __future__ import annotations

import asyncio

from typedmcp.protocol.deadlines import Deadlines


async def _limited(deadlines: Deadlines, limit: float, sleep: float) -> str:
    key, deadline = deadlines.start(limit)
    try:
        await asyncio.sleep(sleep)
        return "finished"
    except asyncio.CancelledError:
        return "expired" if deadline.expired else "cancelled"
    finally:
        deadlines.finish(key)


def test_a_shorter_limit_started_later_still_expires_first() -> None:
    async def main() -> list[str]:
        deadlines = Deadlines()
        slow = asyncio.create_task(_limited(deadlines, 0.5, 10))
        await asyncio.sleep(0.01)
        quick = asyncio.create_task(_limited(deadlines, 0.05, 10))
        done = asyncio.create_task(_limited(deadlines, 5, 0.01))
        return list(await asyncio.gather(quick, done, slow))

    assert asyncio.run(main()) == ["expired", "finished", "expired"]


def test_sequential_calls_with_one_limit_arm_the_timer_once() -> None:
    async def main() -> tuple[int, list[str]]:
        deadlines = Deadlines()
        loop = asyncio.get_running_loop()
        armed = 0
        call_at = loop.call_at

        def counting_call_at(*args: object) -> asyncio.TimerHandle:
            nonlocal armed
            armed += 1
            return call_at(*args)  # type: ignore[arg-type]

        loop.call_at = counting_call_at  # type: ignore[method-assign]
        outcomes = [await _limited(deadlines, 300, 0) for _ in range(100)]
        return armed, outcomes

    armed, outcomes = asyncio.run(main())
    assert armed == 1 and outcomes == ["finished"] * 100


def test_a_cancelled_caller_is_not_reported_as_expired() -> None:
    async def main() -> str:
        deadlines = Deadlines()
        task = asyncio.create_task(_limited(deadlines, 5, 10))
        await asyncio.sleep(0.01)
        task.cancel()
        return await task

    assert asyncio.run(main()) == "cancelled"
