"""One sending process of ``test_sql_multiprocess_facade``: a script, not a test module.

``python _mp_sender.py '<json config>'`` prints ``ready``, waits for a line on stdin so all
processes start together, then sends through ``Messenger.send`` on the shared database with
a live key (a local accept-everything adapter stands in for the provider) and prints one
JSON line: the job ids it was given and how many sends the quota refused.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping, Sequence

from unified_messaging import Connection, Messenger, QuotaExceeded, Vault
from unified_messaging.providers import (
    InboundCallback,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)
from unified_messaging.store.sql import SqlStore


class AcceptAll:
    max_batch = 1

    def __init__(self, connection: Connection, credentials: Mapping[str, str]) -> None:
        self.code = connection.provider

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        return SubmitOutcome.accepted(f"ok-{request.job_id}")

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return


async def main(config: dict[str, object]) -> None:
    connect_args = config.get("connect_args") or {}
    assert isinstance(connect_args, dict)
    store = SqlStore(str(config["url"]), connect_args=connect_args, migrate=False)
    messenger = Messenger(
        store,
        vault=Vault.from_spec(str(config["vault"])),
        live_adapters={"sms_a": AcceptAll},  # type: ignore[dict-item]
    )
    async with messenger:
        principal = await messenger.authenticate(str(config["api_key"]))
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

        async def send_one(n: int) -> str | None:
            try:
                response = await messenger.send(
                    principal, {"to": "+905551234567", "body": f"from {config['index']}: {n}"}
                )
            except QuotaExceeded:
                return None
            return response.job_id

        answers = await asyncio.gather(*(send_one(n) for n in range(int(str(config["sends"])))))
    jobs = [job for job in answers if job is not None]
    print(json.dumps({"jobs": jobs, "refused": len(answers) - len(jobs)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
