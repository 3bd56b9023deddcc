"""The shapes every edge shares for İYS (D33): what ``connect`` takes, what ``show`` and the
other calls answer. The password is taken and never given back: no answer has a field for
it or for a token.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._models import _Response
from .records import LIVE_BASE_URL, IysConnection

__all__ = ["IysConnect", "IysConnectionOut", "IysSyncReport"]

#: İYS's codes are numbers (its pages' examples: ``iysCode``, ``brandCode``, 8 digits).
MAX_CODE: Final = 10**15


class IysConnect(BaseModel):
    """What ``iys connect`` takes."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    iys_code: int = Field(gt=0, lt=MAX_CODE, description="The service provider's İYS number.")
    brand_code: int = Field(gt=0, lt=MAX_CODE, description="The brand's İYS number.")
    username: str = Field(min_length=1, max_length=255, description="The İYS API user.")
    password: str = Field(
        min_length=1, max_length=1024, repr=False, description="Its password (sealed)."
    )
    base_url: str = Field(
        default=LIVE_BASE_URL,
        min_length=1,
        max_length=2048,
        description="İYS's address: live by default, the sandbox's by its URL.",
    )

    @field_validator("username")
    @classmethod
    def _printable(cls, value: str) -> str:
        if not value.isprintable() or value != value.strip():
            raise ValueError("must be printable, without surrounding spaces")
        return value


class IysConnectionOut(_Response):
    """A workspace's İYS connection as every edge shows it: never the password or a token."""

    _omit_none = False

    workspace_id: str
    iys_code: int
    brand_code: int
    username: str
    base_url: str
    created_at: datetime | None
    updated_at: datetime | None
    token_valid_until: datetime | None = Field(
        description="When the shared access token runs out (null: none held now)."
    )
    pulled_at: datetime | None = Field(description="When İYS's changes were last pulled.")

    @classmethod
    def of(cls, connection: IysConnection) -> IysConnectionOut:
        return cls(
            workspace_id=connection.workspace_id,
            iys_code=connection.iys_code,
            brand_code=connection.brand_code,
            username=connection.username,
            base_url=connection.base_url,
            created_at=connection.created_at,
            updated_at=connection.updated_at,
            token_valid_until=(
                connection.token.access_expires_at if connection.token.sealed else None
            ),
            pulled_at=connection.pulled_at,
        )


class IysSyncReport(_Response):
    """What ``iys sync`` did."""

    _omit_none = False

    pulled: dict[str, int]
    registered: int
    refused: int
    pending: int
