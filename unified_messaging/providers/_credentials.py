"""The base of every provider's credentials schema, and the check that names what is wrong.

Apart from ``_http`` (httpx, tenacity) so that storing or checking a connection's credentials
needs pydantic only: the library's admin surface imports this module, and each provider's
own schema is loaded with its adapter when a connection of that provider is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .._errors import InvalidCredentials

__all__ = ["CredentialsModel", "validate_credentials"]

C = TypeVar("C", bound="CredentialsModel")


class CredentialsModel(BaseModel):
    """Base of every provider's credentials schema: secrets are ``SecretStr``."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def validate_credentials(model: type[C], credentials: Mapping[str, str]) -> C:
    """Validate, or raise :class:`InvalidCredentials` naming what is missing or wrong.

    The message names fields only; it never echoes a value.
    """
    try:
        return model.model_validate(dict(credentials))
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False, include_input=False):
            field = ".".join(str(p) for p in error["loc"]) or "credentials"
            if error["type"] == "missing":
                problems.append(f"{field} is missing")
            elif error["type"] == "extra_forbidden":
                problems.append(f"{field} is not a credential of this provider")
            else:
                problems.append(f"{field}: {error['msg']}")
        raise InvalidCredentials("Invalid credentials: " + "; ".join(problems)) from None
