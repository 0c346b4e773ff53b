"""A TCP proxy that breaks the network between a store and one engine, on command.

It lives with the engines because a replicated topology's members talk through
proxies of their own (``resp_ha``): a replica's link to its primary can then lag
or be cut while the store's own connections pass. Peers are told apart by the
source address they connect from (``set_peers``); the suite's faults
(``nomnesia.suite.nemesis``) drive the same proxies by mode.

Failpoints fake a failed call inside the client; a real network fails in ways
the client cannot see coming: a reply that never arrives although the write
landed, a connection reset mid-request, a peer that accepts and then says
nothing. The proxy sits on a loopback port in front of the real engine and the
store is given the proxy's URL, so every byte passes through it.

Modes (switch at any time; they act on open connections too):

- ``pass``: forward both ways.
- ``latency``: forward both ways, each chunk held ``latency_ms`` first.
- ``reset``: reset every connection (RST), and every new one on accept.
- ``blackhole``: accept, read and drop; nothing is forwarded either way (a stall). Leaving
  it closes (RST) every connection it held: their bytes are gone, so a link that carried
  on after the heal would hand the client a stream with a hole in it.
- ``drop-replies``: on every connection open (past its first exchange) when
  the mode is set, the next reply is swallowed and the connection reset: the
  request landed, the client never knows. Connections opened meanwhile pass
  (a reply lost in a handshake only fails a connect, which loses no write).

Per peer (``set_peers``): connections from given source addresses get a mode of their
own, ``latency`` (a lagging link) or ``blackhole`` (a cut one), whatever the proxy's mode
is for everyone else. Healing a cut closes what it held, as leaving ``blackhole`` does.

The proxy runs its own event loop in a daemon thread, so a synchronous
provider (``url()``), a pytest test and an asyncio store can all share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MODES", "Proxy", "ProxyLoop"]

T = TypeVar("T")

MODES: tuple[str, ...] = ("pass", "latency", "reset", "blackhole", "drop-replies")
_CHUNK = 65536


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0), as a crashed peer or a middlebox would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport = writer.transport
    transport.abort()


class ProxyLoop:
    """An event loop in a daemon thread, for proxies shared by sync and async callers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="nemesis-proxy",
                                        daemon=True)
        self._thread.start()
        self._proxies: list[Proxy] = []

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def proxy(self, target_host: str, target_port: int, name: str = "") -> Proxy:
        """A proxy started on this loop, closed by :meth:`close`."""
        proxy = self.run(Proxy.start(target_host, target_port, name))
        self._proxies.append(proxy)
        return proxy

    def close(self) -> None:
        """Close the proxies :meth:`proxy` started, cancel what still runs on the loop
        (connections they held), then stop it: a task left pending would be destroyed with
        the loop, and say so on stderr."""
        if self.loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if tasks:  # aborted connections end their pumps (a delayed chunk within 1 s)
                _, pending = await asyncio.wait(tasks, timeout=2.0)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)

        proxies, self._proxies = self._proxies, []
        for proxy in proxies:
            with contextlib.suppress(Exception):
                self.run(proxy.aclose())
        with contextlib.suppress(Exception):
            self.run(cancel_all(), timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class _Conn:
    """One client connection and its upstream, pumped in both directions."""

    def __init__(self, proxy: Proxy, client: asyncio.StreamWriter,
                 upstream: asyncio.StreamWriter | None) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.requested = False  # a request went upstream since the last reply
        self.rounds = 0  # request/reply exchanges completed
        self.doomed = False  # drop-replies: swallow the next reply, then reset
        peer = client.get_extra_info("peername")
        self.peer: str = str(peer[0]) if peer else ""

    def abort(self) -> None:
        _abort(self.client)
        if self.upstream is not None:
            _abort(self.upstream)

    def close(self) -> None:
        """Close both sides as a peer would (FIN after what is buffered): both closed
        their way already, so nothing is cut short."""
        self.client.close()
        if self.upstream is not None:
            self.upstream.close()


class Proxy:
    """Forwards ``127.0.0.1:port`` to ``target_host:target_port`` under a switchable mode.

    Create and start it on the loop that will run it (``await Proxy.start(...)``),
    or through :class:`ProxyLoop`. ``set_mode`` is safe from any thread.
    """

    def __init__(self, target_host: str, target_port: int, name: str = "") -> None:
        self.target = (target_host, target_port)
        self.name = name or f"{target_host}:{target_port}"
        self.mode = "pass"
        self.latency_ms = 0.0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conns: set[_Conn] = set()
        self._peers: dict[str, tuple[str, float]] = {}
        self.accepted = 0
        self.swallowed = 0
        """Replies ``drop-replies`` swallowed so far: a lost reply that swallowed none
        faulted nothing, so the suite holds the fault until this moves (or a bound)."""

    @classmethod
    async def start(cls, target_host: str, target_port: int, name: str = "") -> Proxy:
        proxy = cls(target_host, target_port, name)
        proxy._loop = asyncio.get_running_loop()
        proxy._server = await asyncio.start_server(proxy._handle, "127.0.0.1", 0)
        proxy.port = proxy._server.sockets[0].getsockname()[1]
        return proxy

    def url_for(self, url: str) -> str:
        """``url`` with its host:port replaced by the proxy's (credentials, path kept)."""
        parts = urlsplit(url)
        auth = parts.netloc.rpartition("@")[0]
        netloc = f"{auth}@127.0.0.1:{self.port}" if auth else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def set_mode(self, mode: str, latency_ms: float = 0.0) -> None:
        """Switch mode; ``reset`` and ``drop-replies`` also act on open connections."""
        if mode not in MODES:
            raise ValueError(f"unknown proxy mode {mode!r}; known: {', '.join(MODES)}")

        def apply() -> None:
            healed_stall = self.mode == "blackhole" and mode != "blackhole"
            self.mode, self.latency_ms = mode, latency_ms
            for conn in list(self._conns):
                if conn.peer in self._peers:
                    continue  # a peer with a mode of its own keeps it
                if mode == "reset" or healed_stall:
                    conn.abort()
                conn.doomed = mode == "drop-replies" and conn.rounds > 0

        self._call(apply)

    def set_peers(self, peers: set[str] | frozenset[str], mode: str,
                  latency_ms: float = 0.0) -> None:
        """Give connections from the source addresses ``peers`` a mode of their own
        (``pass`` returns them to the proxy's mode); acts on open connections too."""
        if mode not in ("pass", "latency", "blackhole"):
            raise ValueError(f"a peer's mode is pass, latency or blackhole, not {mode!r}")

        def apply() -> None:
            for peer in peers:
                was = self._mode_of(peer)[0]
                if mode == "pass":
                    self._peers.pop(peer, None)
                else:
                    self._peers[peer] = (mode, latency_ms)
                if was == "blackhole" and mode != "blackhole":
                    for conn in [c for c in self._conns if c.peer == peer]:
                        conn.abort()

        self._call(apply)

    def _mode_of(self, peer: str) -> tuple[str, float]:
        return self._peers.get(peer, (self.mode, self.latency_ms))

    def _call(self, apply: Callable[[], None]) -> None:
        """Run ``apply`` on the proxy's loop, from any thread, and wait for it."""
        if self._loop is None:
            raise RuntimeError("proxy not started")
        loop = self._loop
        if _on_loop(loop):
            apply()
            return
        done = threading.Event()

        def run() -> None:
            try:
                apply()
            finally:
                done.set()

        loop.call_soon_threadsafe(run)
        done.wait(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        peer = writer.get_extra_info("peername")
        mode = self._mode_of(str(peer[0]) if peer else "")[0]
        if mode == "reset":
            _abort(writer)
            return
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        if mode != "blackhole":
            try:
                upstream = await asyncio.open_connection(*self.target)
            except OSError:
                _abort(writer)
                return
        conn = _Conn(self, writer, upstream[1] if upstream else None)
        self._conns.add(conn)
        closed_cleanly = False
        try:
            if upstream is None:
                await self._drain(reader)
            else:
                closed_cleanly = all(await asyncio.gather(
                    self._pump(conn, reader, upstream[1], request=True),
                    self._pump(conn, upstream[0], writer, request=False)))
        finally:
            self._conns.discard(conn)
            if closed_cleanly:
                conn.close()
            else:
                conn.abort()

    @staticmethod
    async def _drain(reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(OSError):
            while await reader.read(_CHUNK):
                pass

    async def _pump(self, conn: _Conn, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    *, request: bool) -> bool:
        """Forward ``src`` to ``dst`` under the mode; True if ``src`` ended with a close.

        A close is passed on as one (``write_eof``, after what is still buffered), and
        the other direction carries on: a peer's last bytes before it closes reach the
        other side. Ending any other way (a fault, an error) resets both sides.
        """
        try:
            while True:
                data = await src.read(_CHUNK)
                if not data:
                    if dst.can_write_eof():
                        dst.write_eof()
                        return True
                    break
                mode, latency_ms = self._mode_of(conn.peer)
                if mode == "blackhole":
                    continue
                if mode == "reset":
                    break
                if mode == "latency" and latency_ms > 0:
                    await asyncio.sleep(latency_ms / 1000)  # the injected delay itself
                if request:
                    conn.requested = True
                elif conn.requested:
                    if conn.doomed:
                        self.swallowed += 1
                        break  # the request landed; its reply never reaches the client
                    conn.requested = False
                    conn.rounds += 1
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        conn.abort()
        return False

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self._conns):
                conn.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
