from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from api import signals

        signals.connect()
