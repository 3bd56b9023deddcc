"""Message templates (D9): rendering, the editor's preview, and ``messenger.templates``."""
