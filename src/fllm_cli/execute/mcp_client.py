"""MCP servers over stdio, through the official Python SDK: list their tools, call them.

Each server (an argv, never a shell line) is started once per process and kept open while
fllm runs: the sessions live on one background event loop, and calls from the runner's
threads are handed to it, so independent branches may call one server at the same time. A
server's own stderr goes nowhere (a tool's words never reach the terminal raw).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from fllm_cli.errors import UsageError
from fllm_cli.execute.failure import ToolFailure

START_TIMEOUT = 30.0  # seconds for a server to start and answer initialize


class _Pool:
    """The open sessions of this process, on their own event loop thread."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sessions: dict[tuple[str, ...], Any] = {}
        self.stacks: list[contextlib.AsyncExitStack] = []
        self.lock = threading.Lock()
        self.null: Any = None  # where the servers' stderr goes, opened with the first server

    def _start(self) -> asyncio.AbstractEventLoop:
        with self.lock:
            if self.loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True, name="fllm-mcp").start()
                self.loop = loop
                atexit.register(self.close)
            return self.loop

    def run(self, coro: Any, timeout: float) -> Any:
        """Run ``coro`` on the pool's loop; wait at most ``timeout`` seconds."""
        future = asyncio.run_coroutine_threadsafe(coro, self._start())
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise ToolFailure(f"the MCP server did not answer within {timeout:g} s") from None

    async def session(self, server: tuple[str, ...], base: Path) -> Any:
        if server in self.sessions:
            return self.sessions[server]
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        if self.null is None:
            self.null = open(os.devnull, "w")  # noqa: SIM115 - kept for the process's servers
        stack = contextlib.AsyncExitStack()
        params = StdioServerParameters(command=server[0], args=list(server[1:]), cwd=str(base))
        try:
            read, write = await stack.enter_async_context(stdio_client(params, errlog=self.null))
            session = await stack.enter_async_context(ClientSession(read, write))
            await asyncio.wait_for(session.initialize(), START_TIMEOUT)
        except BaseException:
            with contextlib.suppress(BaseException):
                await stack.aclose()
            raise
        self.stacks.append(stack)
        self.sessions[server] = session
        return session

    def close(self) -> None:
        """Close every session (the servers end) and stop the loop."""
        loop = self.loop
        if loop is None:
            return

        async def close_all() -> None:
            for stack in reversed(self.stacks):
                with contextlib.suppress(BaseException):
                    await stack.aclose()
            self.stacks.clear()
            self.sessions.clear()

        with contextlib.suppress(BaseException):
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self.loop = None


_POOL = _Pool()


def _require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UsageError("MCP needs the MCP Python SDK ('mcp'), which is not installed") from None


def _failure(server: tuple[str, ...], exc: BaseException) -> ToolFailure:
    if isinstance(exc, ToolFailure):
        return exc
    if isinstance(exc, FileNotFoundError):
        return ToolFailure(f"no such program: {server[0]!r}")
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ToolFailure(f"the MCP server {server[0]!r} failed: {text[:200]}")


def list_tools(
    server: tuple[str, ...], base: Path, timeout: float = START_TIMEOUT
) -> list[dict[str, Any]]:
    """Return the server's tools as plain dicts (name, description, inputSchema, outputSchema)."""
    _require_sdk()

    async def listing() -> list[dict[str, Any]]:
        session = await _POOL.session(server, base)
        result = await session.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True) for t in result.tools]

    try:
        return _POOL.run(listing(), timeout)  # type: ignore[no-any-return]
    except BaseException as exc:
        why = _failure(server, exc)
        raise UsageError(f"cannot list the tools of {' '.join(server)!r}: {why}") from None


def call_tool(
    server: tuple[str, ...], tool: str, arguments: dict[str, Any], timeout: float, base: Path
) -> Any:
    """Call ``tool`` of ``server``; return its structured result, else its text."""
    _require_sdk()

    async def calling() -> Any:
        session = await _POOL.session(server, base)
        return await session.call_tool(tool, arguments)

    try:
        result = _POOL.run(calling(), timeout)
    except BaseException as exc:
        raise _failure(server, exc) from None
    text = "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "text", None))
    if result.isError:
        raise ToolFailure(f"the tool reported an error: {text[:200] or 'no message'}")
    data = result.structuredContent
    if isinstance(data, dict):
        return data["result"] if set(data) == {"result"} else data
    return text


def close() -> None:
    """End every MCP server this process started."""
    _POOL.close()
