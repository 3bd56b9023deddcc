from django.urls import include, path

from shop import views

urlpatterns = [
    path("notify/", views.notify),
    path("messaging/", include("unified_messaging.contrib.django.urls")),
]
