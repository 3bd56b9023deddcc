"""Every ``curl`` line of docs/rest.md, run as written against a real ``serve --demo``.

The page promises its examples run against the demo workspace, and shows under each request
the answer it gets (``# → 404 TEMPLATE_NOT_FOUND``). This test reads the page's ``sh`` blocks
in order, parses each ``curl`` (method, URL, headers, body) and sends it with httpx to a
``unified-messaging serve --demo`` subprocess on SQLite in ``tmp_path``, then checks the
status and the error code shown. ``unified-messaging`` lines run as commands on the same
database. A line of another kind, a ``curl`` option it does not know or a ``curl`` without
its answer fails the test: the page stays in a form that can be checked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

ROOT: Final = Path(__file__).resolve().parent.parent
PAGE: Final = ROOT / "docs" / "rest.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
_ANSWER = re.compile(r"# → (\d{3})(?: ([A-Z_]+)\b)?")
_ASSIGNMENT = re.compile(r"[A-Z_]+=\S*")
_VARIABLE = re.compile(r"\$(?:\{([A-Z_]+)\}|([A-Z_]+))")
#: After a command changes the workspace, serve sees it within its 1 s cache; the next request
#: is sent again until it gets its answer, for at most this long.
_CACHE_PATIENCE: Final = 10.0
_PATIENCE: Final = 60.0


@dataclass
class Step:
    """One line of a block: a ``curl`` with its documented answer, or a command."""

    line: str
    kind: str  # "curl" or "command"
    status: int | None = None
    code: str | None = None


@dataclass
class Request:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None


def steps_of(page: str) -> Iterator[Step]:
    """The page's requests and commands, in order, each ``curl`` with its answer."""
    for block in _BLOCK.findall(page):
        previous: Step | None = None
        for line in logical_lines(block):
            answer = _ANSWER.match(line)
            if answer:
                assert previous is not None, f"an answer with no request before it: {line}"
                assert previous.kind == "curl" and previous.status is None, line
                previous.status = int(answer.group(1))
                previous.code = answer.group(2)
                continue
            if not line or line.startswith("#") or _ASSIGNMENT.fullmatch(line):
                continue
            if previous is not None and previous.kind == "curl":
                assert previous.status is not None, f"no '# → status' after: {previous.line}"
                yield previous
            elif previous is not None:
                yield previous
            if line.startswith("curl "):
                previous = Step(line, "curl")
            elif line.startswith("unified-messaging "):
                previous = Step(line, "command")
            else:
                raise AssertionError(f"docs/rest.md: a line this test cannot run: {line}")
        if previous is not None:
            assert previous.kind != "curl" or previous.status is not None, previous.line
            yield previous


def logical_lines(block: str) -> Iterator[str]:
    """The block's lines as a shell reads them: ``\\`` continues one, so does an open quote."""
    buffer = ""
    for raw in block.splitlines():
        if not buffer and raw.lstrip().startswith("#"):
            yield raw.strip()
            continue
        buffer = f"{buffer}\n{raw}" if buffer else raw
        if buffer.endswith("\\"):
            buffer = buffer[:-1]
            continue
        try:
            shlex.split(buffer)
        except ValueError:  # a quote still open: the next line belongs to this one
            continue
        yield buffer.strip()
        buffer = ""
    assert not buffer, f"an unfinished line in a block: {buffer}"


def expand(line: str, variables: Mapping[str, str]) -> list[str]:
    """The shell words of ``line``, with ``$NAME`` expanded outside single quotes."""
    out: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\" and quote != "'":
            out.append(line[index : index + 2])
            index += 2
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote == char else char
        elif char == "$" and quote != "'":
            found = _VARIABLE.match(line, index)
            assert found, f"a $ this test cannot expand in: {line}"
            name = found.group(1) or found.group(2)
            assert name in variables, f"${name} is not one of the page's variables: {line}"
            out.append(variables[name])
            index = found.end()
            continue
        out.append(char)
        index += 1
    return shlex.split("".join(out))


def parse_curl(words: list[str]) -> Request:
    assert words[0] == "curl"
    method: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    body: str | None = None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-s", "-S", "-sS"):
            continue
        if word == "-X":
            method = next(rest)
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            body = next(rest)
        elif not word.startswith("-") and url is None:
            url = word
        else:
            raise AssertionError(f"a curl option this test does not know: {word}")
    assert url is not None, words
    return Request(method or ("POST" if body is not None else "GET"), url, headers, body)


def send(client: httpx.Client, request: Request) -> httpx.Response:
    content = request.body.encode() if request.body is not None else None
    return client.request(request.method, request.url, headers=request.headers, content=content)


def error_code(response: httpx.Response) -> str | None:
    try:
        document: Any = response.json()
    except ValueError:
        return None
    if isinstance(document, dict) and isinstance(document.get("error"), dict):
        code = document["error"].get("code")
        return code if isinstance(code, str) else None
    return None


class DemoServer:
    """``unified-messaging serve --demo --json`` on a free port and SQLite in ``tmp_path``."""

    def __init__(self, tmp_path: Path) -> None:
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("UM_")},
            "UM_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}",
            "PYTHONUNBUFFERED": "1",
        }
        self.cwd = tmp_path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "unified_messaging", "serve", "--demo", "--json", "--port", "0"],
            cwd=tmp_path,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=_PATIENCE)
            raise AssertionError(f"serve --demo did not start: {self.process.stderr.read()}")  # type: ignore[union-attr]
        self.demo: dict[str, str] = json.loads(line)

    def command(self, *args: str) -> str:
        result = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", *args],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=_PATIENCE,
            check=False,
        )
        assert result.returncode == 0, f"unified-messaging {shlex.join(args)}: {result.stderr}"
        return result.stdout

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            _, stderr = self.process.communicate(timeout=_PATIENCE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return stderr


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DemoServer]:
    demo = DemoServer(tmp_path)
    try:
        yield demo
    finally:
        demo.stop()


def test_the_page_has_curl_examples_with_answers() -> None:
    steps = list(steps_of(PAGE.read_text(encoding="utf-8")))
    curls = [step for step in steps if step.kind == "curl"]
    assert len(curls) >= 20
    assert all(step.status is not None for step in curls)


def test_every_curl_example_gets_its_documented_answer(server: DemoServer) -> None:
    connections = json.loads(
        server.command("connections", "list", "--workspace", server.demo["workspace_id"], "--json")
    )
    by_provider = {connection["provider"]: connection for connection in connections}
    variables = {
        "BASE": server.demo["url"],
        "KEY": server.demo["api_key"],
        "DLR": by_provider["sms_a"]["dlr_path"],
        "SMS_E": by_provider["sms_e"]["id"],
    }
    answers: list[str] = []
    wrong: list[str] = []
    changed_by_command = False
    with httpx.Client(timeout=_PATIENCE) as client:
        for step in steps_of(PAGE.read_text(encoding="utf-8")):
            words = expand(step.line, variables)
            if step.kind == "command":
                server.command(*words[1:])
                changed_by_command = True
                continue
            request = parse_curl(words)
            response = send(client, request)
            deadline = time.monotonic() + (_CACHE_PATIENCE if changed_by_command else 0)
            while (response.status_code, error_code(response)) != (
                step.status,
                step.code or error_code(response),
            ) and time.monotonic() < deadline:
                time.sleep(0.1)
                response = send(client, request)
            got = f"{response.status_code} {error_code(response) or ''}".strip()
            answers.append(f"{request.method} {request.url}: {got}")
            if response.status_code != step.status or (
                step.code is not None and error_code(response) != step.code
            ):
                wrong.append(f"{step.line}\n  documented {step.status} {step.code or ''}, got "
                             f"{got}: {response.text[:300]}")  # fmt: skip
            started = request.method == "POST" and request.url.endswith("/v1/verifications")
            if started and response.status_code == 201 and "VER" not in variables:
                variables["VER"] = response.json()["id"]
            is_send = request.method == "POST" and request.url.endswith("/v1/messages")
            if is_send and response.status_code == 201 and "JOB" not in variables:
                sent = response.json()
                variables["JOB"] = sent["job_id"]
                variables["PMID"] = sent["attempts"][0]["provider_message_id"]
    assert not wrong, "\n".join([*wrong, "", "every answer:", *answers])
    assert len(answers) >= 20


def test_the_health_example_shows_the_packages_version() -> None:
    from unified_messaging import __version__

    shown = re.search(r'# → 200 \{"status":"ok","version":"([^"]+)"\}', PAGE.read_text())
    assert shown is not None
    assert shown.group(1) == __version__
