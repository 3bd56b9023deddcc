"""What the browser tests share besides fixtures (a module of its own: every test folder has
a ``conftest``, so importing from one by that name depends on which was loaded first)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Demo"]


@dataclass(frozen=True)
class Demo:
    """What ``serve --demo --json`` printed."""

    url: str
    api_key: str
    workspace_id: str
    login_url: str


class Receiver:
    """A webhook receiver on loopback in a thread of the test process: records each POST's
    headers and answers 200."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []  # type: ignore[var-annotated]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                seen.append((dict(self.headers), self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
