"""A private Docker engine, started for a run where none answers, reachable from this machine only.

The docker provider needs a Docker engine. Where Debian's ``docker.io`` is
installed but no daemon runs (a CI machine, a fresh VM), ``PrivateDaemon``
starts ``dockerd`` with everything under one private directory: its socket,
data root, exec root and pid file. Containers reach nothing but this machine:
no iptables rules, no IP forwarding, no masquerading (so no route out), and
published ports bind 127.0.0.1 only. With no registry to pull from, the provider
builds the images it needs (``images.py``) and runs without Ryuk, whose image it
cannot pull: its own watchdog removes the containers instead.

Nothing outlives the run: ``close()`` stops the daemon by its pid, and a
watchdog does the same if the run dies first (SIGKILL included): it kills every
process that names the private directory and all their descendants (the
containers), detaches the mounts under it, removes it, and deletes the
``docker0`` link if this daemon created it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from nomnesia.suite.contract.errors import BackendUnavailable

from ._proc import Watchdog, run_owners, spawn

__all__ = ["DAEMON_FLAGS", "PrivateDaemon", "can_start"]

DAEMON_FLAGS = ("--iptables=false", "--ip-forward=false", "--ip-masq=false", "--ip=127.0.0.1")
"""No NAT and no forwarding (containers cannot route out); published ports on loopback."""
READY_TIMEOUT = 60.0
BRIDGE = "docker0"


def can_start() -> str | None:
    """None if a private daemon can start here, else why not (one sentence)."""
    if shutil.which("dockerd") is None:
        return "no dockerd on PATH (Debian: apt-get install docker.io)"
    if os.geteuid() != 0:
        return "dockerd needs root, and this run is not root"
    return None


def _link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


class PrivateDaemon:
    """``dockerd`` of our own: ``with PrivateDaemon() as d: os.environ["DOCKER_HOST"] = d.host``."""

    def __init__(self, *, bridge: bool = True) -> None:
        """``bridge=False``: containers get no network at all (``--bridge=none``)."""
        why = can_start()
        if why is not None:
            raise BackendUnavailable("docker", f"cannot start a Docker engine: {why}")
        self._watchdog = Watchdog(run_owners())  # first: nothing may exist that no one removes
        self.dir = Path(tempfile.mkdtemp(prefix="nomnesia-dockerd-"))
        made_bridge = bridge and not _link_exists(BRIDGE)
        self._watchdog.watch_daemon(self.dir, BRIDGE if made_bridge else None)
        self.socket = self.dir / "docker.sock"
        self.host = f"unix://{self.socket}"
        self.log = self.dir / "dockerd.log"
        with open(self.log, "ab") as log:
            self._proc = spawn(["dockerd", *DAEMON_FLAGS, *([] if bridge else ["--bridge=none"]),
                                "--data-root", str(self.dir / "data"),
                                "--exec-root", str(self.dir / "exec"),
                                "--pidfile", str(self.dir / "dockerd.pid"), "-H", self.host],
                               log=log)
        self._watchdog.watch_group(self._proc.pid)
        try:
            self._wait()
        except BaseException:
            self.close()
            raise

    def _wait(self) -> None:
        """Until the daemon answers a ping (bounded), or says why it died."""
        import docker

        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if self._proc.poll() is not None:
                raise BackendUnavailable("docker", f"dockerd exited with {self._proc.returncode}:"
                                         f"\n{self._tail()}")
            try:
                client = docker.DockerClient(base_url=self.host, timeout=2)
                try:
                    if client.ping():
                        return
                finally:
                    client.close()
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise BackendUnavailable("docker", f"dockerd did not answer within "
                                         f"{READY_TIMEOUT:g}s:\n{self._tail()}")
            time.sleep(0.2)

    def _tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])
        except OSError:
            return "(no log)"

    def close(self) -> None:
        """Stop the daemon by its pid (its containers with it), then remove every trace."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(20)
        self._watchdog.close(cleanup=True)  # kills what is left, detaches, removes, unlinks

    def __enter__(self) -> PrivateDaemon:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
