"""How long a restarted Milvus server takes before a Strong read answers within 1 s.

Run:  python bench/bench_milvus_catchup.py [--rounds 4] [--seconds 20] [--set KEY=VALUE]...

Each round writes for ``--seconds`` (single-row upserts, and a delete by id every
third row, as the store writes), then SIGKILLs and restarts the embedded server
(``EngineControl``, as the nemesis does) and polls a Strong ``query`` with a 1 s
deadline until one answers. ``--set`` adds a Milvus setting as an environment
variable (e.g. ``DATANODE_SEGMENT_SYNCPERIOD=5``) to the embedded server's own.

This is what still holds a crashed client's successor up after a server kill in
the nemesis: its ``recover()`` reads the index with Strong consistency.
"""

from __future__ import annotations

import argparse
import logging
import time

from pymilvus import MilvusClient

from nomnesia.adapters.engines import embedded
from nomnesia.adapters.engines.control import EngineControl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0, help="writing before each kill")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    embedded.MILVUS_SERVER_SETTINGS.update(kv.split("=", 1) for kv in args.set)
    logging.disable(logging.CRITICAL)  # pymilvus logs every failed attempt
    with embedded.EmbeddedProvider() as provider:
        url = provider.url("milvus-server")
        MilvusClient(uri=url).create_collection("c", dimension=8, consistency_level="Strong")
        control = EngineControl(provider)
        rows = 0
        try:
            for n in range(args.rounds):
                writer = MilvusClient(uri=url, timeout=5)
                until = time.monotonic() + args.seconds
                while time.monotonic() < until:
                    writer.upsert("c", [{"id": rows, "vector": [0.001 * (rows % 997)] * 8}])
                    rows += 1
                    if rows % 3 == 0:
                        writer.delete("c", ids=[rows - 2])
                writer.close()
                control.kill("milvus-server")
                killed = time.monotonic()
                control.start("milvus-server")
                healthy = time.monotonic() - killed
                reader, tries = MilvusClient(uri=url, timeout=5), 0
                while time.monotonic() < killed + 120:
                    tries += 1
                    try:
                        reader.query("c", filter="id >= 0", limit=5,
                                     consistency_level="Strong", timeout=1.0)
                        break
                    except Exception:  # not loaded yet, or no answer within 1 s
                        time.sleep(0.05)  # poll interval of the bounded wait
                answered = time.monotonic() - killed
                print(f"round {n}: {rows} rows written since the start; healthy {healthy:.1f} s "
                      f"after the kill, a Strong read within 1 s at {answered:.1f} s "
                      f"({answered - healthy:.1f} s later, {tries} tries)", flush=True)
                reader.close()
        finally:
            control.close()


if __name__ == "__main__":
    main()
