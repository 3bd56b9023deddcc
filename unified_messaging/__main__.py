"""``python -m unified_messaging`` and the ``unified-messaging`` console script."""

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
