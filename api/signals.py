"""A person's tokens end with what ends their sessions: a new password, or the account
deactivated. Every road that changes a person saves the user row (the password change page, the
admin, ``manage.py changepassword``, a shell), so the check is on that save."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save

from api.models import ApiToken
from api.tokens import revoke_all

# Set on the instance before its save, read after it.
_BECAUSE = "_attest_revoke_tokens_because"


def _before_save(sender, instance, raw: bool = False, update_fields=None, **kwargs) -> None:
    if raw or instance.pk is None:
        return
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return  # a login's last_login, say: no query
    before = sender.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    because = ""
    if before["is_active"] and not instance.is_active:
        because = ApiToken.Revoked.DEACTIVATED
    elif before["password"] != instance.password:
        because = ApiToken.Revoked.PASSWORD
    setattr(instance, _BECAUSE, because)


def _after_save(sender, instance, created: bool = False, raw: bool = False, **kwargs) -> None:
    because = getattr(instance, _BECAUSE, "")
    if because:
        setattr(instance, _BECAUSE, "")
        revoke_all(user_id=instance.pk, because=because)


def connect() -> None:
    user = get_user_model()
    pre_save.connect(_before_save, sender=user, dispatch_uid="api.tokens.before_save")
    post_save.connect(_after_save, sender=user, dispatch_uid="api.tokens.after_save")
