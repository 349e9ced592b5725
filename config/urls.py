from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import set_language

from api.urls import api_urls

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The header's language switch, on the login page too: a POST that sets the language cookie.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("", include("annotation.urls")),
    path("", include("evaluation.urls")),
    path("", include("api.urls")),
    path("api/v1/", api_urls),
]

# JSON under /api/, the page elsewhere.
handler404 = "api.errors.not_found"
