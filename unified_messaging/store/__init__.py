"""Stores: the protocol and one module per backend."""
