"""A small Django shop that tells its customers their order shipped: the project the
integration tests run, set up as docs/django.md says."""
