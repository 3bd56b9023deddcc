"""A test-mode workspace on the CLI's SQLite file, and what the store holds afterwards.

For ``send`` and ``campaign`` tests: the workspace is set up in this process (all seven
providers on the simulator, sender ``UMTEST``, a template), the command line runs as a
subprocess on the same file, and the messages it stored are read back through the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from unified_messaging import Messenger, Vault
from unified_messaging._domain import MessageRecord
from unified_messaging.store.base import MessageQuery
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed

TEMPLATE = "order_shipped"
TEMPLATE_BODY = "Merhaba {{ name }}, siparişiniz {{ order }} yolda."


@dataclass(frozen=True)
class Bed:
    database_url: str
    master_keys: str
    workspace_id: str

    def messages(self, *, livemode: bool = False) -> list[MessageRecord]:
        """Every message of the workspace in one mode, newest first."""
        return asyncio.run(self._messages(livemode))

    async def _messages(self, livemode: bool) -> list[MessageRecord]:
        store = SqlStore(self.database_url)
        await store.open()
        try:
            found: list[MessageRecord] = []
            cursor = None
            while True:
                query = MessageQuery(self.workspace_id, livemode, older_than=cursor, limit=1000)
                page = await store.list_messages(query)
                found += page
                if len(page) < query.limit:
                    return found
                cursor = (page[-1].created_at, page[-1].job_id)
        finally:
            await store.close()


def make_bed(database_url: str, master_keys: str) -> Bed:
    async def setup() -> str:
        messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(master_keys))
        try:
            bed = await create_testbed(messenger=messenger)
            await messenger.templates.set(bed.workspace.id, TEMPLATE, TEMPLATE_BODY)
            return bed.workspace.id
        finally:
            await messenger.aclose()

    return Bed(database_url, master_keys, asyncio.run(setup()))


def numbers(count: int, *, start: int = 0) -> Iterator[str]:
    """Distinct Turkish mobile numbers, none of them the simulator's magic ones."""
    for i in range(start, start + count):
        yield f"0532{1000000 + i:07d}"


def write_csv(path: Path, text: str, *, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path
