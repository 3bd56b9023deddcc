"""A host app with ``create_app``'s app mounted and nothing else, served by uvicorn until SIGINT.

``python _mounted_host.py starlette|fastapi DATABASE_URL``: prints ``{"port": N}`` once it
listens. Logs go to stderr (INFO and up), for ``test_mounting`` to read.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import sys
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging import Messenger
from unified_messaging.asgi import create_app
from unified_messaging.store.sql import store_from_url


def main() -> None:
    kind, url = sys.argv[1:3]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("unified_messaging").setLevel(logging.INFO)
    messaging = create_app(Messenger(store_from_url(url)))
    host: Any
    if kind == "fastapi":
        host = FastAPI()
        host.mount("/messaging", messaging)
    else:
        host = Starlette(routes=[Mount("/messaging", app=messaging)])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(host, lifespan="on", ws="none", log_config=None, access_log=False)
    # uvicorn re-raises the SIGINT it stopped on once it is done; a host that wants a clean
    # exit (like `unified-messaging serve`) leaves a handler that ignores it.
    signal.signal(signal.SIGINT, lambda number, frame: None)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
