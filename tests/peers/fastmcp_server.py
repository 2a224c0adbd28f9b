"""A tiny FastMCP 4.1.6 server over stdio, for the typed-tools tests (tests/test_tools_peers.py):
one tool with an enum argument and a structured (object) result, one with a plain result."""

from __future__ import annotations

from typing import Literal

from fastmcp import FastMCP
from pydantic import BaseModel

mcp = FastMCP("fastmcp-peer", version="4.1.6-test")


class Forecast(BaseModel):
    """A day's forecast."""

    city: str
    unit: Literal["C", "F"]
    high: float


@mcp.tool
def forecast(city: str, unit: Literal["C", "F"] = "C") -> Forecast:
    """The forecast for a city."""
    return Forecast(city=city, unit=unit, high=21.5 if unit == "C" else 70.7)


@mcp.tool
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


if __name__ == "__main__":
    mcp.run(show_banner=False)
