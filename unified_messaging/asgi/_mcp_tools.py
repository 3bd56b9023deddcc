"""The MCP tools (D25; ``cancel_message`` and the suppression list's, the
consents' and ``preview_message`` of D33), and the
SDK's ``MCPServer`` that lists and runs them.

Each tool is one façade call, exactly as REST makes it: ``send_message`` is
``Messenger.send``, ``send_bulk`` is ``Messenger.send_bulk``, and so on. The arguments reach
the façade as sent, so the core's models judge them (unknown fields included) and every
failure is the core's :class:`~unified_messaging.MessagingError`, rendered with REST's D13
body. Who is calling is the :class:`~unified_messaging.Principal` that ``McpEndpoint`` put in
the request's scope after checking the Bearer key; a tool never sees the key itself.

Two things are done around the SDK's defaults, on purpose:

- Arguments: the SDK builds an argument model from a function's signature, which drops unknown
  fields silently and nests a model parameter one level down. Each tool instead gets
  :class:`_WholeArguments`, which hands over the whole argument object, and an input schema
  generated from the core's model.
- Errors: a raised ``ToolError`` reaches the client as ``"Error executing tool <name>: …"``,
  text only. A tool here returns its error result itself, so the text starts with the code and
  the structured content is the D13 body; an unexpected exception is ``INTERNAL_ERROR``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, model_validator
from starlette.requests import Request

from .._errors import MessagingError
from .._messenger import Messenger, Principal
from .._models import (
    BulkRequest,
    BulkResponse,
    SendRequest,
    SendResponse,
    StatusRecord,
    parse_model,
)
from .._version import __version__
from ..audit._context import Actor, acting_as
from ..consents.models import ConsentCreate, ConsentDetail, ConsentOut, ConsentPage, ConsentSearch
from ..content.models import SendPreview
from ..suppressions._rules import (
    SuppressionCreate,
    SuppressionOut,
    SuppressionPage,
    SuppressionSearch,
    SuppressionTarget,
)
from ..verifications._models import CheckArguments, CheckResponse, StartRequest, VerificationOut
from ._auth import Answer
from ._errors import _log as log_error
from ._errors import error_body, json_bytes
from ._mcp_shapes import (
    CancelMessageArguments,
    GetConsentArguments,
    GetMessageArguments,
    NoArguments,
    ProviderList,
    ProviderOut,
    TemplateList,
    TemplateOut,
    input_schema,
    output_schema,
)
from ._mcp_text import DESCRIPTIONS, INSTRUCTIONS, TITLES

__all__ = ["PRINCIPAL_SCOPE_KEY", "build_server", "error_result"]

#: Where ``McpEndpoint`` leaves the authorized caller for the tools.
PRINCIPAL_SCOPE_KEY: Final = "unified_messaging.principal"
SERVER_NAME: Final = "unified-messaging"


Arguments = Mapping[str, object]
Operation = Callable[[Principal, Arguments], Awaitable[Answer]]


class _WholeArguments(ArgModelBase):
    """The tool's argument object, untouched: the core's model is the one that validates it."""

    arguments: dict[str, object]

    @model_validator(mode="before")
    @classmethod
    def _whole(cls, data: object) -> dict[str, object]:
        return {"arguments": data}


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    #: Reads only, and only our own store (not the providers' world).
    read_only: bool
    run: Operation
    #: Changes only our own store (the suppression list): not the providers' world.
    closed_world: bool = False


def _specs(messenger: Messenger) -> list[_Spec]:
    async def send_message(principal: Principal, arguments: Arguments) -> Answer:
        return await messenger.send(principal, arguments)

    async def send_bulk(principal: Principal, arguments: Arguments) -> Answer:
        return await messenger.send_bulk(principal, arguments)

    async def preview_message(principal: Principal, arguments: Arguments) -> Answer:
        return await messenger.preview_send(principal, arguments)

    async def get_message(principal: Principal, arguments: Arguments) -> Answer:
        job_id = parse_model(GetMessageArguments, arguments).job_id
        return await messenger.get_message(principal, job_id)

    async def cancel_message(principal: Principal, arguments: Arguments) -> Answer:
        job_id = parse_model(CancelMessageArguments, arguments).job_id
        return await messenger.cancel_message(principal, job_id)

    async def list_providers(principal: Principal, arguments: Arguments) -> Answer:
        parse_model(NoArguments, arguments)
        connections = await messenger.connections.available(principal)
        return ProviderList(
            livemode=principal.livemode, providers=[ProviderOut.of(c) for c in connections]
        )

    async def list_templates(principal: Principal, arguments: Arguments) -> Answer:
        parse_model(NoArguments, arguments)
        templates = await messenger.templates.list(principal.workspace_id)
        return TemplateList(templates=[TemplateOut.of(t) for t in templates])

    async def list_suppressions(principal: Principal, arguments: Arguments) -> Answer:
        return await messenger.suppressions.list(principal, arguments)

    async def add_suppression(principal: Principal, arguments: Arguments) -> Answer:
        with acting_as(_actor(principal)):
            added = await messenger.suppressions.add(principal, arguments, source="api")
        return SuppressionOut.of(added)

    async def remove_suppression(principal: Principal, arguments: Arguments) -> Answer:
        with acting_as(_actor(principal)):
            removed = await messenger.suppressions.remove(principal, arguments)
        return SuppressionOut.of(removed)

    async def create_consent(principal: Principal, arguments: Arguments) -> Answer:
        with acting_as(_actor(principal)):
            return await messenger.consents.create(principal, arguments)

    async def list_consents(principal: Principal, arguments: Arguments) -> Answer:
        return await messenger.consents.list(principal, arguments)

    async def get_consent(principal: Principal, arguments: Arguments) -> Answer:
        consent_id = parse_model(GetConsentArguments, arguments).consent_id
        return await messenger.consents.get(principal, consent_id)

    async def start_verification(principal: Principal, arguments: Arguments) -> Answer:
        return await messenger.verifications.start(principal, arguments)

    async def check_verification(principal: Principal, arguments: Arguments) -> Answer:
        parsed = parse_model(CheckArguments, arguments)
        return await messenger.verifications.check(principal, parsed.id, {"code": parsed.code})

    return [
        _Spec("send_message", SendRequest, SendResponse, False, send_message),
        _Spec("send_bulk", BulkRequest, BulkResponse, False, send_bulk),
        _Spec("preview_message", SendRequest, SendPreview, True, preview_message, True),
        _Spec("get_message", GetMessageArguments, StatusRecord, True, get_message),
        _Spec("cancel_message", CancelMessageArguments, StatusRecord, False, cancel_message),
        _Spec("list_providers", NoArguments, ProviderList, True, list_providers),
        _Spec("list_templates", NoArguments, TemplateList, True, list_templates),
        _Spec("list_suppressions", SuppressionSearch, SuppressionPage, True, list_suppressions),
        _Spec("add_suppression", SuppressionCreate, SuppressionOut, False, add_suppression, True),
        _Spec("remove_suppression", SuppressionTarget, SuppressionOut, False,
              remove_suppression, True),
        _Spec("create_consent", ConsentCreate, ConsentOut, False, create_consent, True),
        _Spec("list_consents", ConsentSearch, ConsentPage, True, list_consents),
        _Spec("get_consent", GetConsentArguments, ConsentDetail, True, get_consent),
        _Spec("start_verification", StartRequest, VerificationOut, False, start_verification),
        _Spec("check_verification", CheckArguments, CheckResponse, False, check_verification,
              True),
    ]  # fmt: skip


def _actor(principal: Principal) -> Actor:
    """Who an audited change over MCP is recorded under (D32): the API key, as over REST."""
    key = principal.key.id if principal.key is not None else "unknown"
    return Actor(f"api_key:{key}")


# --------------------------------------------------------------------------- results


def _text_result(data: dict[str, object], *, text: str, is_error: bool) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=data,
        is_error=is_error,
    )


def success_result(answer: Answer) -> CallToolResult:
    data = answer.to_dict()
    # The same JSON as text too, for clients that read only the content blocks.
    return _text_result(data, text=json_bytes(data).decode("utf-8"), is_error=False)


def error_result(error: MessagingError) -> CallToolResult:
    """A tool error with REST's D13 body as structured content; its text starts with the code."""
    if error.http_status >= 500:
        log_error(error)
    body = error_body(error)
    detail = body["error"]
    assert isinstance(detail, dict)
    text = f"{detail['code']}: {detail['message']}"
    if "job_id" in detail:
        text += f" (job_id: {detail['job_id']})"
    return _text_result(body, text=text, is_error=True)


# --------------------------------------------------------------------------- the server


def principal_of(ctx: Context) -> Principal:
    request = ctx.request_context.request
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if isinstance(request, Request) else None
    if not isinstance(principal, Principal):
        # Only reachable when the SDK is served without McpEndpoint in front of it.
        raise RuntimeError("an MCP tool was called without an authorized principal")
    return principal


ToolFunction = Callable[[dict[str, object], Context], Awaitable[CallToolResult]]


def _function(run: Operation) -> ToolFunction:
    async def tool(arguments: dict[str, object], ctx: Context) -> CallToolResult:
        principal = principal_of(ctx)
        try:
            answer = await run(principal, arguments)
        except MessagingError as exc:
            return error_result(exc)
        except Exception as exc:
            # A bug: REST would answer 500 INTERNAL_ERROR. Left to the SDK, the client would
            # get "Error executing tool" with the exception's text and no code.
            return error_result(_unexpected(exc))
        return success_result(answer)

    return tool


def _unexpected(exc: Exception) -> MessagingError:
    error = MessagingError()  # the base class is the 500 INTERNAL_ERROR
    error.__cause__ = exc  # logged with the traceback of what really failed
    return error


def _tool(spec: _Spec) -> Tool:
    return Tool(
        fn=_function(spec.run),
        name=spec.name,
        title=TITLES[spec.name],
        description=DESCRIPTIONS[spec.name],
        parameters=input_schema(spec.input_model),
        # A schema without an output model: the SDK publishes it and leaves our results,
        # already built from the models, as they are.
        fn_metadata=FuncMetadata(
            arg_model=_WholeArguments, output_schema=output_schema(spec.output_model)
        ),
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=spec.read_only,
            open_world_hint=not (spec.read_only or spec.closed_world),
        ),
    )


def build_server(messenger: Messenger) -> MCPServer:
    """The SDK server with the tools over ``messenger``; not yet bound to a transport."""
    tools = [_tool(spec) for spec in _specs(messenger)]
    # MCPServer() calls logging.basicConfig(), which would configure the host's root logger
    # if it had none yet. A handler in place for the call makes that a no-op.
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)
    try:
        return MCPServer(
            SERVER_NAME,
            title="Unified Messaging",
            version=__version__,
            instructions=INSTRUCTIONS,
            tools=tools,
            subscriptions=False,
        )
    finally:
        root.removeHandler(placeholder)
