"""The JSON Schemas of the REST bodies, generated from the core's pydantic models.

Request bodies are the models' ``mode="validation"`` schemas, responses their
``"serialization"`` schemas. Two kinds of rule cannot come out of pydantic by itself and are
added here, so that the schema accepts exactly what the app accepts (schemathesis checks
both directions):

- rules in Python validators: the control-character ban (the validator functions are
  recognized and turned into a ``pattern``), and "an empty ``body``/``sender`` is no value";
- rules across fields (``_one_of_body_or_template``, ``_mode_rules``, ``_check_fallback``):
  written as ``anyOf``/``not`` over the same properties.

A change to those rules in ``_models`` needs its twin here; the schemathesis test is what
notices when one is missing. The HTTP-only shapes (the error body, health) live here too.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from .._models import (
    BulkRequest,
    BulkResponse,
    SendRequest,
    SendResponse,
    StatusRecord,
    _no_control_chars,
    _scalar_variable,
)
from .._search import MessagePage
from .._types import ALL_PROVIDERS
from ..consents.models import ConsentCreate, ConsentDetail, ConsentOut, ConsentPage
from ..content.models import SendPreview
from ..stats._models import StatsOverview
from ..suppressions._rules import SuppressionCreate, SuppressionOut, SuppressionPage
from ..verifications._models import CheckRequest, CheckResponse, StartRequest, VerificationOut
from ..verifications._stats import VerificationStats

__all__ = ["REF", "ErrorResponse", "Health", "JsonObject", "model_schemas", "query_parameters"]

REF: Final = "#/components/schemas/{model}"
#: What ``_no_control_chars`` lets through: no C0 control but TAB, LF and CR; no DEL.
NO_CONTROLS: Final = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F]*$"

JsonObject = dict[str, Any]


# --------------------------------------------------------------------------- HTTP-only shapes


class ErrorDetailOut(BaseModel):
    field: str = Field(description="Dotted path of the field (``items.3.to``), or a header name.")
    message: str


class HintOut(BaseModel):
    code: str = Field(description="What the text misses (OPT_OUT_MISSING, ...).")
    message: str


class HttpError(BaseModel):
    code: str = Field(description="Stable error code (D14).", examples=["VALIDATION_ERROR"])
    message: str = Field(description="For people; may change. Switch on ``code``.")
    details: list[ErrorDetailOut] | None = Field(
        default=None, description="Only on 400: every field that is wrong."
    )
    job_id: str | None = Field(
        default=None, description="Only on 502: the job kept as failed, readable by GET."
    )
    hints: list[HintOut] | None = Field(
        default=None,
        description="Only on 422 COMMERCIAL_CONTENT_REFUSED: what the commercial text misses.",
    )


class ErrorResponse(BaseModel):
    """The body of every error response (D13)."""

    error: HttpError


class Health(BaseModel):
    """``GET /v1/health``: the process is up. No authentication, no I/O."""

    status: Literal["ok"]
    version: str


# --------------------------------------------------------------------------- model schemas


class _ContractSchema(GenerateJsonSchema):
    """Pydantic's generator, plus the validator functions of ``_models`` as patterns."""

    def function_after_schema(
        self, schema: core_schema.AfterValidatorFunctionSchema
    ) -> JsonSchemaValue:
        generated = super().function_after_schema(schema)
        if _validator(schema) is _no_control_chars:
            generated = {**generated, "pattern": NO_CONTROLS}
        return generated

    def function_before_schema(
        self, schema: core_schema.BeforeValidatorFunctionSchema
    ) -> JsonSchemaValue:
        generated = super().function_before_schema(schema)
        if _validator(schema) is _scalar_variable:
            # Text values of template variables get the same ban as ``body``.
            generated = copy.deepcopy(generated)
            for branch in generated.get("anyOf", ()):
                if branch.get("type") == "string":
                    branch["pattern"] = NO_CONTROLS
        return generated


def _validator(
    schema: core_schema.AfterValidatorFunctionSchema | core_schema.BeforeValidatorFunctionSchema,
) -> object:
    return schema["function"].get("function")


def model_schemas() -> JsonObject:
    """``components.schemas``: every body's schema, refined."""
    models: Sequence[tuple[type[BaseModel], Literal["validation", "serialization"]]] = [
        (SendRequest, "validation"),
        (BulkRequest, "validation"),
        (SendResponse, "serialization"),
        (SendPreview, "serialization"),
        (BulkResponse, "serialization"),
        (StatusRecord, "serialization"),
        (MessagePage, "serialization"),
        (SuppressionCreate, "validation"),
        (SuppressionOut, "serialization"),
        (SuppressionPage, "serialization"),
        (ConsentCreate, "validation"),
        (ConsentOut, "serialization"),
        (ConsentDetail, "serialization"),
        (ConsentPage, "serialization"),
        (ErrorResponse, "serialization"),
        (Health, "serialization"),
        (StartRequest, "validation"),
        (CheckRequest, "validation"),
        (VerificationOut, "serialization"),
        (CheckResponse, "serialization"),
        (VerificationStats, "serialization"),
        (StatsOverview, "serialization"),
    ]
    _, top = models_json_schema(models, ref_template=REF, schema_generator=_ContractSchema)
    schemas: JsonObject = top["$defs"]
    _refine_send_request(schemas["SendRequest"])
    _refine_bulk_request(schemas["BulkRequest"], schemas["BulkItem"])
    return schemas


def query_parameters(model: type[BaseModel]) -> list[JsonObject]:
    """A request model's fields as OpenAPI query parameters (``GET /v1/messages``).

    A query value is a string or absent, never null: the ``null`` branch of an optional
    field goes, and what is left is the field's own schema (constraints, enum, format).
    """
    schema = model.model_json_schema(ref_template=REF, schema_generator=_ContractSchema)
    parameters: list[JsonObject] = []
    for name, prop in schema["properties"].items():
        [value] = [branch for branch in prop.get("anyOf", [prop]) if branch.get("type") != "null"]
        value = {key: item for key, item in value.items() if key not in ("title", "description")}
        if prop.get("default") is not None:
            value["default"] = prop["default"]
        parameters.append(
            {
                "name": name,
                "in": "query",
                "required": name in schema.get("required", ()),
                "description": prop.get("description", ""),
                "schema": value,
            }
        )
    return parameters


# --------------------------------------------------------------------------- request refinements


def _string_branch(prop: JsonObject) -> JsonObject:
    for branch in prop.get("anyOf", [prop]):
        if branch.get("type") == "string":
            return dict(branch)
    raise AssertionError("no string branch")  # the models changed: refine them anew


def _empty_means_none(prop: JsonObject) -> None:
    # ``_empty_as_none`` reads "" as "not given" before the length rule runs.
    branch = _string_branch(prop)
    branch.pop("minLength", None)
    prop["anyOf"] = [branch, {"type": "null"}]
    prop["description"] = (
        prop.get("description", "") + " An empty string means not given."
    ).strip()


def _unique_fallback(prop: JsonObject) -> None:
    for branch in prop["anyOf"]:
        if branch.get("type") == "array":
            branch["uniqueItems"] = True


def _primary_not_in_fallback() -> JsonObject:
    clauses = [
        {
            "required": ["provider", "fallback"],
            "properties": {
                "provider": {"const": code},
                "fallback": {"type": "array", "contains": {"const": code}},
            },
        }
        for code in ALL_PROVIDERS
    ]
    return {"anyOf": clauses}


_GIVEN_TEXT: Final = {"type": "string", "minLength": 1}
_NOT_GIVEN_TEXT: Final = {"type": ["string", "null"], "maxLength": 0}


def _refine_send_request(schema: JsonObject) -> None:
    props = schema["properties"]
    _empty_means_none(props["body"])
    _empty_means_none(props["sender"])
    _unique_fallback(props["fallback"])
    # Exactly one of body / template; variables only with a template.
    schema["anyOf"] = [
        {
            "title": "Plain text",
            "required": ["body"],
            "properties": {
                "body": _GIVEN_TEXT,
                "template": {"type": "null"},
                "variables": {"type": "null"},
            },
        },
        {
            "title": "Template",
            "required": ["template"],
            "properties": {"template": {"type": "string"}, "body": _NOT_GIVEN_TEXT},
        },
    ]
    schema["not"] = _primary_not_in_fallback()
    schema["allOf"] = [_class_rule()]


def _class_rule() -> JsonObject:
    """D33: ``recipient_type`` only with ``category: commercial`` (absent or null else)."""
    return {
        "title": "A recipient type only for a commercial message",
        "anyOf": [
            {"properties": {"recipient_type": {"type": "null"}}},
            {"required": ["category"], "properties": {"category": {"const": "commercial"}}},
        ],
    }


def _refine_bulk_request(schema: JsonObject, item: JsonObject) -> None:
    props = schema["properties"]
    _empty_means_none(props["sender"])
    _unique_fallback(props["fallback"])
    _empty_means_none(item["properties"]["body"])
    plain_item = {
        "required": ["body"],
        "properties": {"body": _GIVEN_TEXT, "variables": {"type": "null"}},
    }
    template_item = {"properties": {"body": _NOT_GIVEN_TEXT}}
    # Plain mode: every item has a body and no variables; template mode: no item has a body.
    schema["anyOf"] = [
        {
            "title": "Plain text",
            "properties": {"template": {"type": "null"}, "items": {"items": plain_item}},
        },
        {
            "title": "Template",
            "required": ["template"],
            "properties": {"template": {"type": "string"}, "items": {"items": template_item}},
        },
    ]
    schema["not"] = _primary_not_in_fallback()
    schema["allOf"] = [_class_rule()]
