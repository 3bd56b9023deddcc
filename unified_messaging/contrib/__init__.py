"""Integrations with frameworks: each subpackage is an optional extra (``django``)."""
