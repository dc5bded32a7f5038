"""What SQL counts: one row per handler call."""
from django.db import models


class HandlerCall(models.Model):
    """One save of a subscription by drf-stripe's webhook handler.

    The package calls no user code of its own; Django's post_save signal on its Subscription model
    is where a user hooks in (a welcome mail, a provisioning call). Its handler saves the
    subscription once per event it handles (`update_or_create`), inside the same transaction.
    """

    subscription_id = models.CharField(max_length=256, db_index=True)
    created = models.BooleanField()
    at = models.DateTimeField(auto_now_add=True)
