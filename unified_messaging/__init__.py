"""unified-messaging: Turkish SMS providers, Telegram and WhatsApp Cloud behind one API."""

from ._version import __version__

__all__ = ["__version__"]
