"""A TCP proxy that breaks the network between a store and one engine, on command.

It lives with the engines because a replicated topology's members talk through
proxies of their own (``resp_ha``): a replica's link to its primary can then lag
or be cut while the store's own connections pass. Peers are told apart by the
source address they connect from (``set_peers``); the suite's faults
(``nomnesia.suite.faults``) put toxics on the same proxies.

Failpoints fake a failed call inside the client; a real network fails in ways
the client cannot see coming: a reply that never arrives although the write
landed, a connection reset mid-request, a peer that accepts and then says
nothing. The proxy sits on a loopback port in front of the real engine and the
store is given the proxy's URL, so every byte passes through it.

What it does to the bytes is a *toxic* (``toxics/``: ``latency``, ``refuse``, ``stall``,
``lost-reply``, each a small class registered by name), set with :meth:`Proxy.set_toxic` and
taken off with ``set_toxic(None)``; it acts on open connections too. The proxy calls the
toxic's hooks (accept, arm, each chunk, removal) and names none of them: a new fault is a
new toxic, never a new branch here.

Per peer (``set_peers``): connections from given source addresses get a toxic of their own
(a lagging or cut replication link), whatever the proxy's toxic is for everyone else.

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

from .toxics import Step, Toxic

__all__ = ["Proxy", "ProxyLoop"]

T = TypeVar("T")

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
    """Forwards ``127.0.0.1:port`` to ``target_host:target_port`` through a switchable toxic.

    Create and start it on the loop that will run it (``await Proxy.start(...)``),
    or through :class:`ProxyLoop`. ``set_toxic`` and ``set_peers`` are safe from any thread.
    """

    def __init__(self, target_host: str, target_port: int, name: str = "") -> None:
        self.target = (target_host, target_port)
        self.name = name or f"{target_host}:{target_port}"
        self.toxic: Toxic | None = None
        """What every connection goes through (None: it passes), peers' own aside."""
        self.port = 0
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conns: set[_Conn] = set()
        self._peers: dict[str, Toxic] = {}
        self.accepted = 0
        self.requests = 0
        """Chunks of request bytes clients sent through (toxic or not): whether a fault on
        the engine behind (a pause) met any traffic at all."""

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

    def set_toxic(self, toxic: Toxic | None) -> None:
        """Put ``toxic`` on every connection (None: let everything pass), open ones too;
        the toxic it replaces is removed first (a stall's removal closes what it held)."""

        def apply() -> None:
            old, self.toxic = self.toxic, toxic
            for conn in list(self._conns):
                if conn.peer in self._peers:
                    continue  # a peer with a toxic of its own keeps it
                if old is not None:
                    old.removed(conn)
                if toxic is not None:
                    toxic.armed(conn)

        self._call(apply)

    def set_peers(self, peers: set[str] | frozenset[str], toxic: Toxic | None) -> None:
        """Give connections from the source addresses ``peers`` a toxic of their own (None
        returns them to the proxy's); acts on open connections too."""

        def apply() -> None:
            for peer in peers:
                old = self._peers.pop(peer, None)
                if toxic is not None:
                    self._peers[peer] = toxic
                for conn in [c for c in self._conns if c.peer == peer]:
                    if old is not None:
                        old.removed(conn)
                    if toxic is not None:
                        toxic.armed(conn)

        self._call(apply)

    def _toxic_of(self, peer: str) -> Toxic | None:
        return self._peers.get(peer, self.toxic)

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
        toxic = self._toxic_of(str(peer[0]) if peer else "")
        if toxic is not None and not toxic.accepts():
            _abort(writer)
            return
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        if toxic is None or toxic.forwards:
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
        """Forward ``src`` to ``dst`` through the toxic; True if ``src`` ended with a close.

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
                if request:
                    self.requests += 1
                toxic = self._toxic_of(conn.peer)
                step = Step.FORWARD if toxic is None else await toxic.step(conn, request)
                if step is Step.DROP:
                    continue
                if step is Step.CUT:
                    break
                if request:
                    conn.requested = True
                elif conn.requested:
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
