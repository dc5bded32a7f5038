"""The package's URLs as its README includes them, and a health check for the crash check."""
from django.http import HttpResponse
from django.urls import include, path


def healthz(_request):
    """Answers once a worker serves requests."""
    return HttpResponse("ok")


urlpatterns = [
    path("stripe/", include("drf_stripe.urls")),
    path("healthz", healthz),
]
