"""Delivery figures (``GET /v1/stats``, ``messenger.stats``): placeholder, filled below."""
