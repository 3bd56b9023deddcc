from django.urls import include, path

from shop import receivers, views  # noqa: F401 - receivers connect on import

urlpatterns = [
    path("notify/", views.notify),
    path("ship/", views.ship),
    path("login/code/", views.send_code),
    path("login/check/", views.check_code),
    path("messaging/", include("unified_messaging.contrib.django.urls")),
]
