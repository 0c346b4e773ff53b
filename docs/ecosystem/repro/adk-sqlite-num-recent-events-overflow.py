"""SqliteSessionService.get_session(num_recent_events=2**64) raises OverflowError.

``SqliteSessionService.get_session`` adds ``LIMIT ?`` with
``GetSessionConfig.num_recent_events`` as its parameter, unclamped
(``GetSessionConfig`` checks only that it is >= 0), and Python's sqlite3 module
cannot bind an int outside SQLite's signed 64-bit range: any value of 2**63 or more
fails, 2**63 - 1 works. Written against google-adk 2.13.0.

Run::

    python adk-sqlite-num-recent-events-overflow.py
"""

import asyncio
import os
import sys
import tempfile
from importlib.metadata import version

from google.adk.events import Event
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types


async def main(path: str) -> int:
    service = SqliteSessionService(path)
    try:
        ids = {"app_name": "repro", "user_id": "u", "session_id": "s"}
        session = await service.create_session(**ids)
        await service.append_event(session, Event(author="user", content=types.Content(
            role="user", parts=[types.Part(text="hello")])))
        got = await service.get_session(**ids, config=GetSessionConfig(
            num_recent_events=2**63 - 1))
        print(f"get_session(num_recent_events=2**63 - 1): {len(got.events)} event(s)")
        try:
            got = await service.get_session(**ids, config=GetSessionConfig(
                num_recent_events=2**64))
        except OverflowError as exc:
            print(f"google-adk {version('google-adk')}: SqliteSessionService.get_session("
                  f"num_recent_events=2**64) raised OverflowError: {exc}")
            return 1
        print(f"not reproduced: get_session(num_recent_events=2**64) returned "
              f"{len(got.events)} event(s)")
        return 0
    finally:
        await service.close()


with tempfile.TemporaryDirectory() as tmp:
    code = asyncio.run(main(os.path.join(tmp, "sessions.db")))
sys.exit(code)
