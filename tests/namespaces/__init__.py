"""One test file per namespace of ``Messenger`` (``messenger.keys`` -> ``test_keys.py``)."""
