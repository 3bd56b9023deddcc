"""Settings of the test project; the test sets the UM_DJANGO_* variables it needs."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "test-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "unified_messaging.contrib.django",
    "shop",
]
ROOT_URLCONF = "shop.urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("UM_DJANGO_DB", str(BASE_DIR / "db.sqlite3")),
        # Every view in a transaction: a send inside one must neither wait nor fail.
        "ATOMIC_REQUESTS": True,
    }
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

UNIFIED_MESSAGING = {
    # unified-messaging's tables beside Django's (on SQLite: shop.unified_messaging.sqlite3).
    "DATABASE_URL": os.environ.get("UM_DJANGO_DATABASE_URL", "django"),
    "WORKSPACE": os.environ.get("UM_DJANGO_WORKSPACE"),
    "TEST_MODE": os.environ.get("UM_DJANGO_TEST_MODE") == "1",
    "WEBHOOK_SECRET": os.environ.get(
        "UM_DJANGO_WEBHOOK_SECRET", "whsec_dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LTMyYnl0ZXM="
    ),
}
if os.environ.get("UM_DJANGO_TYPO"):
    UNIFIED_MESSAGING["DATABASE_ULR"] = "sqlite+aiosqlite:///nowhere.db"
