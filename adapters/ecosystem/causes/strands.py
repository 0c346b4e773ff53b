"""Causes of the Strands audits: ``SessionRepository`` backends through ``--strands-session``.

At the root: a message's key is an index the *session manager* chooses
(``RepositorySessionManager.append_message``: one more than the last message it knows of),
and nothing in the repository interface says whether that index is taken. Every backend
audited writes it unconditionally, and opens a session by reading, then creating. So two
requests for one session meet in the repository, where nothing orders them.
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

FILE = ("strands-file",)
VALKEY = ("strands-valkey",)
SQL = ("strands-sql-sqlite", "strands-sql-postgres")
STRANDS = (*FILE, *VALKEY, *SQL)
_APPEND = "strands.session.repository_session_manager:RepositorySessionManager.append_message"
_INIT = "strands.session.repository_session_manager:RepositorySessionManager.__init__"
_FILE = "strands.session.file_session_manager:FileSessionManager"
_VALKEY = "strands_valkey_session_manager.valkey_session_manager:ValkeySessionManager"
_KV = "strands_agents_session.manager:KeyValueSessionManager"

CAUSES: tuple[Cause, ...] = (
    Cause("strands-create-message-overwrites", STRANDS, ("G1", "G2", "G3", "G5"), "data loss",
          "RepositorySessionManager.append_message takes the next index from the last "
          "message its own manager knows of (read once, in initialize); "
          "FileSessionManager.create_message replaces message_<index>.json (os.replace), "
          "ValkeySessionManager.create_message runs JSON.SET, and KeyValueSessionManager."
          "create_message upserts (SQLSessionStorage: UPDATE, then INSERT when no row)",
          "two requests of one session (two workers, a retry while the first still runs) "
          "each append at the same index, and the second silently replaces the first's "
          "message: an acknowledged turn is gone, and a newer message can take an older "
          "one's place, so reads disagree on the order; on PostgreSQL two inserts of one "
          "index may also fail with a unique violation",
          "two FileSessionManager(session_id='s') and their agents; each appends one "
          "message  # the session holds only the second",
          "two session managers appending to one session at once (every backend audited); "
          "one manager at a time never shows it",
          documented=None,
          functions=(_APPEND, f"{_FILE}.create_message", f"{_VALKEY}.create_message",
                     f"{_KV}.create_message"),
          match=(r"^(?:G1 durability: [^\n]*was acknowledged, then read|G2 exactly once: "
                 r"[^\n]*(?:twice|duplicate)|G3 read your writes: [^\n]*(?:misses|missing)"
                 r"|G5 order: |G12 errors: append_message[^\n]*raised IntegrityError)",),
          racy=True, shows=r"the first turn was overwritten"),
    Cause("strands-session-create-race", STRANDS, ("G12",), "availability",
          "RepositorySessionManager.__init__ calls read_session and, when it finds none, "
          "create_session, which refuses a session that exists (FileSessionManager: its "
          "directory; ValkeySessionManager: EXISTS; KeyValueSessionManager: a get); the "
          "manager does not read the session again",
          "of two first requests of one new session, the one that reads second raises "
          "SessionException 'Session ... already exists' instead of joining the session",
          "two threads each make FileSessionManager(session_id='new')  # one raises "
          "SessionException",
          "two session managers opening one new session at once (or, on FileSessionManager, "
          "a session left half-deleted: strands-file-delete-wedges-session)",
          documented=None,
          functions=(_INIT, f"{_FILE}.create_session", f"{_VALKEY}.create_session",
                     f"{_KV}.create_session"),
          match=(r"^G12 errors: append_message[\s\S]*?raised SessionException: Session "
                 r"[\s\S]*? already exists",),
          racy=True, shows=r"raised SessionException: Session \S+ already exists"),
    Cause("strands-file-delete-wedges-session", FILE, ("G8", "G10", "G12"), "availability",
          "FileSessionManager.delete_session removes the session's directory "
          "(shutil.rmtree) while FileSessionManager._write_file makes a message's "
          "directories again (os.makedirs(..., exist_ok=True)) without session.json; "
          "list_messages raises when the directory went between read_agent and its listing",
          "a delete concurrent with an append leaves a directory without session.json: "
          "read_session finds no session, create_session refuses the directory, so every "
          "later session manager of that id raises 'already exists' until it is deleted "
          "again; concurrent deletes, restores and appends also raise FileNotFoundError, "
          "FileExistsError, OSError 'Directory not empty' and 'Messages directory missing'",
          "a manager restores session 's'; delete_session('s'); the manager appends; "
          "FileSessionManager(session_id='s')  # SessionException: already exists",
          "a delete of a session while another request of it appends or restores",
          documented=None,
          functions=(f"{_FILE}.delete_session", f"{_FILE}._write_file",
                     f"{_FILE}.list_messages"),
          match=(r"^G12 errors: (?:forget|get_history|append_message)\([^\n]*?\) raised "
                 r"(?:FileNotFoundError|FileExistsError|OSError|SessionException: Messages "
                 r"directory missing)",),
          racy=True, shows=r"raises SessionException: Session s already exists"),
    Cause("strands-file-path-separator-ids", FILE, ("Inputs",), "hazard",
          "strands._identifier.validate, called by FileSessionManager._get_session_path",
          "a session id with a path separator ('ann/1', '../ann') is refused with "
          "ValueError before anything is written: an id cannot reach outside its session's "
          "directory, and an application must map ids that may hold a '/' first",
          "FileSessionManager(session_id='ann/1')  # ValueError: id cannot contain path "
          "separators",
          "a session id with '/' (any path separator of the platform)",
          documented="FileSessionManager.__init__'s docstring: 'ID is not allowed to "
                     "contain path separators (e.g., a/b)'",
          functions=("strands._identifier:validate", f"{_FILE}._get_session_path"),
          # An id may hold newlines: the block is read across them.
          match=(r"^Inputs: [\s\S]*?raised ValueError: [\s\S]*?id cannot contain path "
                 r"separators",),
          shows=r"refused 'ann/1'"),
    Cause("strands-file-long-ids", FILE, ("Inputs",), "availability",
          "FileSessionManager._get_session_path names the session's directory "
          "session_<id>, with no limit, hash or shortening",
          "a session id past 247 bytes (256 ASCII characters, 64 emoji) makes a directory "
          "name over the file system's 255 bytes: OSError 'File name too long', before "
          "anything is written; nothing documents a limit",
          "FileSessionManager(session_id='u' * 256)  # OSError: [Errno 36] File name too "
          "long",
          "a session id of more than 247 bytes in UTF-8",
          documented=None,
          functions=(f"{_FILE}._get_session_path", f"{_FILE}.create_session"),
          match=(r"^Inputs: [\s\S]*?raised OSError: \[Errno 36\] File name too long",),
          shows=r"could not create sessions with ids of 256 characters"),
    Cause("strands-valkey-key-patterns", VALKEY, ("G1", "G8", "G9"), "data loss",
          "ValkeySessionManager.list_messages scans 'session:<id>:agent:<agent>:message:*' "
          "and ValkeySessionManager.delete_session scans 'session:<id>*', the id unescaped "
          "in both SCAN MATCH patterns",
          "glob syntax in a session id is read as a pattern: the session 'ann*' (or '?', "
          "'[a-z]') lists other sessions' messages as its own, a session whose id holds a "
          "backslash finds none of its own, and deleting 'ann' deletes every session whose "
          "id starts with 'ann' (the pattern ends in '*' with no separator)",
          "sessions 'ann', 'anna', 'ann*' each with a message; list_messages('ann*', 'a')  "
          "# all three; delete_session('ann')  # anna's is gone",
          "a session id with *, ?, [ ] or \\, or one that another id starts with (the "
          "delete); always",
          documented=None,
          functions=(f"{_VALKEY}.list_messages", f"{_VALKEY}.delete_session"),
          match=(r"^(?:G9 isolation: |G1 durability: user id [\s\S]*?acknowledged appends "
                 r"are not live)",),
          shows=r"session '\S+ann\*' lists \[|session '\S+anna' lists \[\]"),
    Cause("strands-valkey-colon-ids", VALKEY, ("Inputs", "G10"), "hazard",
          "ValkeySessionManager._get_session_key",
          "a session id with ':' is refused with ValueError before anything is written (':' "
          "separates the parts of its keys), so an application must map such ids first",
          "ValkeySessionManager(session_id='user:ann', client=client)  # ValueError",
          "a session id with ':'",
          documented="ValkeySessionManager._get_session_key's docstring: 'Raises: "
                     "ValueError: If session_id contains colon characters'",
          functions=(f"{_VALKEY}._get_session_key",),
          # The partial-failure test reads such an id after the faults and sees it still
          # refused: the same refusal, not a wedge.
          match=(r"^(?:Inputs|G10 interruption): [\s\S]*?ValueError: session_id cannot "
                 r"contain ':' characters",),
          shows=r"refused 'user:ann'"),
    Cause("strands-kv-delete-leaves-messages", SQL, ("G8",), "data loss",
          "KeyValueSessionManager.delete_session deletes the message partition "
          "(SESSION#<id>#AGENT#<agent>) of each AGENT# record it finds in the session's "
          "partition, then that partition",
          "a message stored without an agent record to point to it (an append of a request "
          "that restored the session before a delete) outlives every later delete_session, "
          "and the next session of that id lists it as its own",
          "a manager restores 's'; delete_session('s'); the manager appends; "
          "delete_session('s'); a new session 's' lists the late message",
          "a delete of a session while another request of it appends (SQLite and "
          "PostgreSQL alike)",
          documented=None,
          functions=(f"{_KV}.delete_session",),
          match=(r"^G8 forget: ",),
          racy=True, shows=r"a deleted message is back"),
    Cause("strands-sql-postgres-key-255", ("strands-sql-postgres",), ("Inputs",),
          "availability",
          "strands_session_sql.session_manager.SQLSessionStorage declares pk and sk "
          "String(255), and strands_agents_session.keys.messages_pk is "
          "'SESSION#<id>#AGENT#<agent id>'",
          "a session id longer than about 240 characters is refused by PostgreSQL "
          "(StringDataRightTruncation): with 256 characters the session cannot be created, "
          "with 245 its messages cannot be stored; SQLite ignores the length; nothing "
          "documents a limit",
          "SQLSessionManager(session_id='u' * 256, url=postgres_url)  # DataError: value too "
          "long for type character varying(255)",
          "a session id of more than 255 characters less the agent id and 15, on "
          "PostgreSQL (or any database that enforces VARCHAR lengths)",
          documented=None,
          functions=("strands_session_sql.session_manager:SQLSessionStorage.__init__",
                     "strands_agents_session.keys:messages_pk"),
          match=(r"^Inputs: [\s\S]*?StringDataRightTruncation",),
          shows=r"value too long for type character varying\(255\)"),
)
