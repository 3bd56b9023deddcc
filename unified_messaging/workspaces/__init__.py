"""Workspaces and their settings: ``messenger.workspaces``."""
