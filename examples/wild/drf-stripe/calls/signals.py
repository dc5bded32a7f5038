"""The row per handler call, written where a user's code would run."""
from django.db.models.signals import post_save
from django.dispatch import receiver
from drf_stripe.models import Subscription

from .models import HandlerCall


@receiver(post_save, sender=Subscription)
def record_handler_call(sender, instance, created, **kwargs):
    """Records that the handler saved this subscription (`created`: the row was new)."""
    HandlerCall.objects.create(subscription_id=instance.subscription_id, created=created)
