"""İYS (D33): a workspace's connection to İYS, and the work that keeps consents in step.

Filled in below; the names load on first use (PEP 562), so :mod:`.work` (which the consents
service imports) and :mod:`.records` (which the store imports) load nothing else.
"""

from __future__ import annotations
