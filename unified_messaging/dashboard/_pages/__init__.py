"""The dashboard's pages: one module per page, each a thin handler over ``Messenger``."""
