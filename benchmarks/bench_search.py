"""Search mode's ranking (issue 32): the hand-written BM25 of ``typedmcp.host.discovery``
against ``bm25s`` (PyPI) on a synthetic catalog of 500 tools.

Run from the repository root::

    .venv/bin/python benchmarks/bench_search.py [--tools 500] [--rounds 7] [--quick]

Prints, for each ranker, the time to build the index, the median time of one query, and
how many of the labelled queries put the expected tool first and in the top three. The
same words go into both (name x3, title x2, description, argument names; the tokenizer of
``discovery.words``), so the comparison is of the rankers; ``bm25s`` with its own
tokenizer (English stop words, no name splitting) is a third row. Without ``bm25s``
installed (``pip install bm25s``) its rows are skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from typedmcp.host.discovery import FIELD_WEIGHTS, SearchIndex, _fields, words
from typedmcp.host.registry import ToolEntry

DOMAINS = [
    ("notes", "note"), ("calendar", "event"), ("mail", "message"), ("files", "file"),
    ("github", "issue"), ("slack", "channel"), ("jira", "ticket"), ("db", "row"),
    ("weather", "forecast"), ("maps", "route"), ("crm", "contact"), ("billing", "invoice"),
    ("storage", "bucket"), ("k8s", "pod"), ("docs", "document"), ("photos", "album"),
    ("music", "playlist"), ("shop", "order"), ("hr", "employee"), ("wiki", "page"),
    ("tasks", "todo"), ("chat", "thread"), ("search", "index"), ("logs", "entry"),
    ("metrics", "dashboard"),
]
ACTIONS = [
    ("create", "Create a new {noun} in {domain}", ["title", "body"]),
    ("get", "Get one {noun} of {domain} by its id", ["id"]),
    ("list", "List the {noun}s of {domain}, newest first", ["limit", "cursor"]),
    ("update", "Change the fields of a {noun} in {domain}", ["id", "fields"]),
    ("delete", "Delete a {noun} from {domain} for good", ["id"]),
    ("search", "Find {noun}s of {domain} matching a query", ["query", "limit"]),
    ("archive", "Archive a {noun} of {domain} (it can be restored)", ["id"]),
    ("restore", "Restore an archived {noun} of {domain}", ["id"]),
    ("share", "Share a {noun} of {domain} with a person by e-mail", ["id", "email"]),
    ("export", "Export {noun}s of {domain} as CSV", ["format", "since"]),
    ("import", "Import {noun}s into {domain} from a CSV file", ["path"]),
    ("count", "Count the {noun}s of {domain}", ["filter"]),
    ("tag", "Add a label to a {noun} of {domain}", ["id", "label"]),
    ("untag", "Remove a label from a {noun} of {domain}", ["id", "label"]),
    ("comment", "Comment on a {noun} of {domain}", ["id", "text"]),
    ("history", "The change history of a {noun} in {domain}", ["id"]),
    ("subscribe", "Be told when a {noun} of {domain} changes", ["id", "webhook"]),
    ("lock", "Lock a {noun} of {domain} against edits", ["id", "reason"]),
    ("move", "Move a {noun} of {domain} to another folder", ["id", "folder"]),
    ("stats", "Usage statistics of {domain} {noun}s per day", ["days"]),
]
#: (query, the tool a model would want)
QUERIES = [
    ("add a note", "notes__create_note"),
    ("find notes about groceries", "notes__search_note"),
    ("weather forecast for a city", "weather__get_forecast"),
    ("delete a calendar event", "calendar__delete_event"),
    ("post a comment on a slack channel", "slack__comment_channel"),
    ("export invoices as csv", "billing__export_invoice"),
    ("label a jira ticket", "jira__tag_ticket"),
    ("who changed this wiki page", "wiki__history_page"),
    ("restore archived email message", "mail__restore_message"),
    ("count pods", "k8s__count_pod"),
    ("share a document by email", "docs__share_document"),
    ("list my todos", "tasks__list_todo"),
]


def catalog(size: int) -> list[ToolEntry]:
    entries = []
    for number in range(size):
        domain, noun = DOMAINS[number % len(DOMAINS)]
        action, text, arguments = ACTIONS[(number // len(DOMAINS)) % len(ACTIONS)]
        round_ = number // (len(DOMAINS) * len(ACTIONS))
        tool = f"{action}_{noun}" + (f"_{round_}" if round_ else "")
        definition = {
            "name": tool,
            "description": text.format(noun=noun, domain=domain),
            "inputSchema": {"type": "object", "properties": {a: {"type": "string"} for a in arguments}},
        }
        entries.append(ToolEntry(f"{domain}__{tool}", domain, tool, definition))
    return entries


def document(entry: ToolEntry) -> list[str]:
    fields = _fields(entry)
    return [term for field, weight in FIELD_WEIGHTS for term in words(fields[field]) * weight]


def ours(entries: list[ToolEntry]) -> Callable[[str], list[str]]:
    index = SearchIndex(entries)
    return lambda query: [entry.name for entry, _ in index.rank(query)[:10]]


def bm25s_same_words(entries: list[ToolEntry]) -> Callable[[str], list[str]]:
    import bm25s

    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index([document(entry) for entry in entries], show_progress=False)
    names = [entry.name for entry in entries]

    def query(text: str) -> list[str]:
        terms = [t for t in words(text) if t in retriever.vocab_dict]
        if not terms:
            return []
        found, scores = retriever.retrieve([terms], k=10, show_progress=False)
        return [names[int(i)] for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return query


def bm25s_own_tokenizer(entries: list[ToolEntry]) -> Callable[[str], list[str]]:
    import bm25s

    texts = [" ".join(_fields(entry).values()) for entry in entries]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    names = [entry.name for entry in entries]

    def query(text: str) -> list[str]:
        tokens = bm25s.tokenize([text], stopwords="en", show_progress=False)
        try:
            found, scores = retriever.retrieve(tokens, k=10, show_progress=False)
        except (ValueError, KeyError):
            return []
        return [names[int(i)] for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return query


def measure(name: str, build: Callable[[list[ToolEntry]], Callable[[str], list[str]]],
            entries: list[ToolEntry], rounds: int) -> dict[str, Any]:
    builds, queries = [], []
    search = build(entries)
    for _ in range(rounds):
        start = time.perf_counter()
        search = build(entries)
        builds.append(time.perf_counter() - start)
        start = time.perf_counter()
        for text, _ in QUERIES:
            search(text)
        queries.append((time.perf_counter() - start) / len(QUERIES))
    first = sum(1 for text, want in QUERIES if search(text)[:1] == [want])
    top3 = sum(1 for text, want in QUERIES if want in search(text)[:3])
    return {"ranker": name, "build ms": statistics.median(builds) * 1e3,
            "query us": statistics.median(queries) * 1e6, "top-1": first, "top-3": top3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    entries = catalog(args.tools)
    rankers: list[tuple[str, Callable[[list[ToolEntry]], Callable[[str], list[str]]]]] = [
        ("discovery.SearchIndex", ours)]
    try:
        import bm25s  # noqa: F401

        rankers += [("bm25s, same words", bm25s_same_words), ("bm25s, own tokenizer", bm25s_own_tokenizer)]
    except ImportError:
        print("bm25s is not installed: its rows are skipped (pip install bm25s)")
    print(f"{len(entries)} tools, {len(QUERIES)} labelled queries, medians of {rounds} rounds")
    print(f"{'ranker':<24}{'build ms':>10}{'query us':>10}{'top-1':>7}{'top-3':>7}")
    for name, build in rankers:
        row = measure(name, build, entries, rounds)
        print(f"{row['ranker']:<24}{row['build ms']:>10.2f}{row['query us']:>10.1f}"
              f"{row['top-1']:>5}/{len(QUERIES)}{row['top-3']:>5}/{len(QUERIES)}")


if __name__ == "__main__":
    main()
