"""The example's one addition: a row per call of the package's subscription handler."""
from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "calls"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import signals  # noqa: F401  (connects the receiver)
