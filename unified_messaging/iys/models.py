"""The shapes every edge shares for İYS (D33): what ``connect`` takes, what ``show`` and the
other calls answer. The password is taken and never given back: no answer has a field for
it or for a token.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._models import _Response
from .records import LIVE_BASE_URL, IysConnection

__all__ = ["IysConnect", "IysConnectionOut", "IysRefusal", "IysStateOut", "IysSyncReport"]

#: İYS's codes are numbers (its pages' examples: ``iysCode``, ``brandCode``, 8 digits).
MAX_CODE: Final = 10**15


class IysConnect(BaseModel):
    """What ``iys connect`` takes: İYS's API user (``iys_code``, ``brand_code``,
    ``username``, ``password``, ``base_url``), or ``via_provider``: the id of the
    workspace's İletimerkezi or Verimor connection, whose consent API registers the
    consents (with ``brand_code``, and no İYS user or password)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    iys_code: int | None = Field(
        default=None, gt=0, lt=MAX_CODE, description="The service provider's İYS number."
    )
    brand_code: int = Field(gt=0, lt=MAX_CODE, description="The brand's İYS number.")
    username: str | None = Field(
        default=None, min_length=1, max_length=255, description="The İYS API user."
    )
    password: str | None = Field(
        default=None, min_length=1, max_length=1024, repr=False,
        description="Its password (sealed).",
    )  # fmt: skip
    base_url: str = Field(
        default=LIVE_BASE_URL,
        min_length=1,
        max_length=2048,
        description="İYS's address: live by default, the sandbox's by its URL.",
    )
    via_provider: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description=(
            "Register through this provider connection's consent API (İletimerkezi, "
            "Verimor) instead of İYS's own: no İYS user, password or code."
        ),
    )

    @field_validator("username")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and (not value.isprintable() or value != value.strip()):
            raise ValueError("must be printable, without surrounding spaces")
        return value

    @model_validator(mode="after")
    def _one_way(self) -> IysConnect:
        direct = {"iys_code": self.iys_code, "username": self.username,
                  "password": self.password}  # fmt: skip
        if self.via_provider is not None:
            given = [name for name, value in direct.items() if value is not None]
            if given or self.base_url != LIVE_BASE_URL:
                named = ", ".join(given or ["base_url"])
                raise ValueError(f"via_provider takes no İYS API user: leave out {named}")
        else:
            missing = [name for name, value in direct.items() if value is None]
            if missing:
                raise ValueError(f"{', '.join(missing)} required (or via_provider)")
        return self


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
    cursors: dict[str, str | None] = Field(
        default_factory=dict,
        description="Where the next pull of each source starts (İYS's `after`): HS, IYS.",
    )
    via_provider: str | None = Field(
        default=None,
        description="The provider connection whose consent API registers the consents "
        "(null: İYS's own API).",
    )

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
            cursors={"HS": connection.after_hs, "IYS": connection.after_iys},
            via_provider=connection.via_connection,
        )


class IysSyncReport(_Response):
    """What ``iys sync`` did."""

    _omit_none = False

    pulled: dict[str, int]
    registered: int
    refused: int
    pending: int


class IysRefusal(_Response):
    """A consent whose latest change İYS (or the provider) refused."""

    _omit_none = False

    consent_id: str
    recipient: str
    status: str
    code: str | None
    message: str | None
    updated_at: datetime


class IysStateOut(_Response):
    """Where a workspace stands with İYS: its connection (null: none), how many live
    changes wait to be registered, and the latest refusals among its recently changed
    live consents."""

    _omit_none = False

    connection: IysConnectionOut | None
    pending: int
    refused: list[IysRefusal]
