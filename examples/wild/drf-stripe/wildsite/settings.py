"""Settings of the drf-stripe-subscription example: the package's README setup, a database
from WILD_DB_URL (postgres://... or sqlite:///path) and the webhook secret from
WILD_STRIPE_WEBHOOK_SECRET. Nothing here changes how the package handles a webhook."""
import os
from urllib.parse import urlparse

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "wild-example-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "wildsite.urls"
WSGI_APPLICATION = "wildsite.wsgi.application"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "rest_framework",
    "drf_stripe",
    "calls.apps.CallsConfig",
]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]


def database(url):
    """Django's DATABASES entry for a postgres:// or sqlite:/// URL."""
    u = urlparse(url)
    if u.scheme in ("postgres", "postgresql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": u.path.lstrip("/"),
            "USER": u.username or "postgres",
            "PASSWORD": u.password or "",
            "HOST": u.hostname or "127.0.0.1",
            "PORT": str(u.port or 5432),
        }
    if u.scheme == "sqlite":
        # Two gunicorn workers write one file: Django's documented settings for concurrent
        # SQLite writers. A deferred transaction that reads before it writes (update_or_create
        # does) cannot wait for the other writer and fails with "database is locked"; IMMEDIATE
        # takes the write lock at BEGIN, and the timeout lets the other worker wait for it.
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": u.path,
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    raise ValueError(f"WILD_DB_URL: expected postgres://... or sqlite:///path, got {url!r}")


DATABASES = {"default": database(os.environ["WILD_DB_URL"])}

DRF_STRIPE = {
    # The API key is never used: a webhook is handled from its payload alone (no network here).
    "STRIPE_API_SECRET": "sk_test_unused",
    "STRIPE_WEBHOOK_SECRET": os.environ["WILD_STRIPE_WEBHOOK_SECRET"],
}
