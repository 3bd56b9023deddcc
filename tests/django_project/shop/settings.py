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
    }
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

UNIFIED_MESSAGING = {
    "DATABASE_URL": "django",  # unified-messaging's tables beside Django's
    "WORKSPACE": os.environ.get("UM_DJANGO_WORKSPACE"),
    "TEST_MODE": os.environ.get("UM_DJANGO_TEST_MODE") == "1",
    "WEBHOOK_SECRET": os.environ.get(
        "UM_DJANGO_WEBHOOK_SECRET", "whsec_dGVzdC1vbmx5LXdlYmhvb2stc2VjcmV0LTMyYnl0ZXM="
    ),
}
if os.environ.get("UM_DJANGO_TYPO"):
    UNIFIED_MESSAGING["DATABASE_ULR"] = "sqlite+aiosqlite:///nowhere.db"
