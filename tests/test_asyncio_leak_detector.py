"""The suite's asyncio leak detector (``conftest.py``) sees what it must: each test here
makes asyncio report one kind of leak and takes the report itself (else the detector would
fail the test, as it fails any other test with such a report)."""

from __future__ import annotations

import asyncio
import gc

from conftest import _take_asyncio_reports


def test_a_task_exception_nobody_retrieves_is_seen() -> None:
    async def fail() -> None:
        raise ValueError("lost")

    async def main() -> None:
        asyncio.ensure_future(fail())  # noqa: RUF006 - the leak under test
        await asyncio.sleep(0.01)

    asyncio.run(main())
    gc.collect()
    reports = _take_asyncio_reports()
    assert any(r.startswith("Task exception was never retrieved") and "ValueError('lost')" in r for r in reports)


def test_a_future_exception_nobody_retrieves_is_seen() -> None:
    async def main() -> None:
        asyncio.get_running_loop().create_future().set_exception(KeyError("lost"))

    asyncio.run(main())
    gc.collect()
    assert any(r.startswith("Future exception was never retrieved") for r in _take_asyncio_reports())


def test_a_pending_task_nothing_holds_is_seen_before_its_loop_cancels_it() -> None:
    """Without the collection before shutdown, ``asyncio.run`` would cancel the task
    quietly, and the leak would show only in a long-running process."""

    async def main() -> None:
        queue: asyncio.Queue[int] = asyncio.Queue()
        asyncio.ensure_future(queue.get())  # noqa: RUF006 - waits forever; no one keeps it
        await asyncio.sleep(0)

    asyncio.run(main())
    reports = _take_asyncio_reports()
    assert any(r.startswith("Task was destroyed but it is pending") and "Queue.get" in r for r in reports)


def test_a_pending_task_someone_holds_is_cancelled_quietly() -> None:
    held: list[asyncio.Task[None]] = []

    async def main() -> None:
        held.append(asyncio.ensure_future(asyncio.sleep(3600)))
        await asyncio.sleep(0)

    asyncio.run(main())
    assert held[0].cancelled()
    assert _take_asyncio_reports() == []
