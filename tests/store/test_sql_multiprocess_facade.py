"""Four OS processes send through ``Messenger`` on one SQLite file and on PostgreSQL.

Afterwards every job id any process was given is readable, none is duplicated, and the
monthly quota count is exact: the quota is a database row, not process memory.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from _databases import Database

from unified_messaging import Messenger, Vault, generate_key_spec

PROCESSES = 4
SENDS_PER_PROCESS = 15
QUOTA = 40
SENDER = Path(__file__).with_name("_mp_sender.py")
STEP_TIMEOUT = 60


async def test_four_processes_send_with_an_exact_shared_quota(sql_database: Database) -> None:
    spec = generate_key_spec("mp")
    store = sql_database.store()
    admin = Messenger(store, vault=Vault.from_spec(spec))  # system clock, as the senders
    async with admin:
        workspace = await admin.workspaces.create(
            "multi-process",
            monthly_quota=QUOTA,
            recipient_limit=None,  # one number, many sends
        )
        await admin.connections.add(
            workspace.id,
            "sms_a",
            credentials={"usercode": "u", "password": "p"},
            default_sender="ACME",
        )
        key = await admin.keys.create(workspace.id, livemode=True)

        processes = []
        try:
            for index in range(PROCESSES):
                config = {
                    "url": sql_database.url,
                    "connect_args": sql_database.connect_args,
                    "vault": spec,
                    "api_key": key.secret,
                    "sends": SENDS_PER_PROCESS,
                    "index": index,
                }
                processes.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        str(SENDER),
                        json.dumps(config),
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                    )
                )
            for process in processes:
                assert process.stdout is not None
                line = await asyncio.wait_for(process.stdout.readline(), STEP_TIMEOUT)
                assert line.strip() == b"ready"
            for process in processes:
                assert process.stdin is not None
                process.stdin.write(b"go\n")
                await process.stdin.drain()
            results = []
            for process in processes:
                out, _ = await asyncio.wait_for(process.communicate(), STEP_TIMEOUT)
                assert process.returncode == 0
                results.append(json.loads(out))
        finally:
            for process in processes:
                if process.returncode is None:
                    process.kill()
                    await process.wait()

        jobs = [job for result in results for job in result["jobs"]]
        assert len(jobs) == len(set(jobs)) == QUOTA
        assert sum(r["refused"] for r in results) == PROCESSES * SENDS_PER_PROCESS - QUOTA
        principal = await admin.principal(workspace.id, livemode=True)
        for job_id in jobs:
            record = await admin.get_message(principal, job_id)
            assert record.status == "sent"
        usage = await admin.workspaces.quota_usage(workspace.id)
        assert usage.used == QUOTA
