"""Creates the Stripe customers an audit's events name, and the one price they subscribe to.

drf-stripe-subscription refuses an event for a customer it does not know
(`StripeUser.objects.get(customer_id=...)` raises, the view answers 500), as it would for a real
Stripe account's customers created before the app knew them. A real app creates a StripeUser when a
user checks out; here they are made up front for `cus_<base>` to `cus_<base + count - 1>`.
"""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from drf_stripe.models import Price, Product, StripeUser


class Command(BaseCommand):
    help = "Create Django users with StripeUsers cus_<base>..cus_<base+count-1>, and price_wild."

    def add_arguments(self, parser):
        parser.add_argument("--base", type=int, required=True)
        parser.add_argument("--count", type=int, required=True)

    @transaction.atomic
    def handle(self, *args, base, count, **options):
        if count < 1 or base < 0:
            raise ValueError("--base must be >= 0 and --count >= 1")
        product, _ = Product.objects.get_or_create(product_id="prod_wild", defaults={"active": True})
        Price.objects.get_or_create(
            price_id="price_wild",
            defaults={"product": product, "price": 100, "active": True, "currency": "usd", "freq": "month_1"},
        )
        User = get_user_model()
        names = [f"cus_{base + i}" for i in range(count)]
        known = set(User.objects.filter(username__in=names).values_list("username", flat=True))
        users = User.objects.bulk_create([User(username=n) for n in names if n not in known])
        StripeUser.objects.bulk_create([StripeUser(user=u, customer_id=u.username) for u in users])
        self.stdout.write(f"{len(users)} customers created, {len(known)} already there")
