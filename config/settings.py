"""Settings, every value from the environment (see .env.example)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_secret_key, env_str, local_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
# The embedded default must start with no configuration: without SECRET_KEY, a random key is
# made once and kept in var/ (a deployment with several hosts sets SECRET_KEY on each).
# A key that is set must be a real one: a placeholder or a short key stops the app at start.
SECRET_KEY = env_secret_key("SECRET_KEY") or local_secret_key(VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "axes",
    "ninja",
    "annotation",
    "evaluation",
    "api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Static files from the app server itself, DEBUG or not: `make run` and a plain gunicorn
    # serve the stylesheet, htmx and our scripts with no web server in front.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page's language from the browser's Accept-Language (English, French).
    "django.middleware.locale.LocaleMiddleware",
    # Before anything reads a body (the CSRF middleware reads POST): see config/middleware.py.
    "config.middleware.RequestBodyLimitMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Before the CSRF middleware, which reads the body of a POST to find its token: an
    # anonymous upload is sent to the login page before a byte of it is read.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A job the broker did not take: 503 and what happens to the work (config/unavailable.py).
    "config.unavailable.QueueDownMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
# A connection kept between requests (DB_CONN_MAX_AGE) is checked before it is used again: after a
# database restart a worker reconnects instead of answering 500 once.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0), conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so that a Celery worker started by a test sees the test database;
    # the pid keeps concurrent test runs apart.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
elif env_bool("DB_PREPARED_STATEMENTS", True):
    # PostgreSQL plans a statement that a connection runs again from its prepared plan: the work
    # queue's query costs as much to plan as to run. Not through a transaction-pooling proxy
    # (pgbouncer in transaction mode), which cannot keep a connection's prepared statements.
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 5}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env_int("PASSWORD_MIN_LENGTH", 12, minimum=8)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes checks every login (the app's and the admin's) before Django's own backend.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# A username is locked out after AXES_FAILURE_LIMIT failures, from any address, for
# AXES_COOLOFF_MINUTES; a success clears the count. Attempts are listed in the admin. Never a
# whole address: a team behind one office address (a NAT) would be locked out by one person's
# typos or by anyone sharing it (docs/access.md says why this is the choice).
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username"]
# django-axes warns when no lock involves the address (axes.W006, against rotating user agents or
# cookies to dodge a lock that involves them); the lock here is on the username alone, which no
# rotation dodges, and leaving the address out is the decision above.
SILENCED_SYSTEM_CHECKS = ["axes.W006"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "config.lockout.locked_out"
AXES_HTTP_RESPONSE_CODE = 429
# The client address axes counts failures by: REMOTE_ADDR, or behind TRUSTED_PROXY_COUNT
# proxies the address those proxies saw (config/client_ip.py).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
CLIENT_IP_HEADER = env_str("CLIENT_IP_HEADER", "HTTP_X_FORWARDED_FOR")
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "evaluation:start"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "Français")]
# The language a person chose with the header's switch (Django's set_language view) is kept in
# this cookie for a year, on this browser; without it the browser's Accept-Language decides.
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
# The French catalogue: `make messages` extracts and compiles it.
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # collectstatic's target; WhiteNoise reads it too
# Served from the apps' and STATICFILES_DIRS' folders directly: nothing to collect first.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_ROOT = VAR_DIR / "media"

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1024)
# Any request but an import declaring a larger body is refused (413) before it is read.
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 1024 * 1024, minimum=1024)

# The REST API (docs/api.md): requests per token, as django-ninja's throttles read them
# ("120/min", "2000/h"); the largest body a POST of answers
# may declare, and the number of records above which a batch is imported in the background.
API_RATE_PER_TOKEN = env_str("API_RATE_PER_TOKEN", "120/min")
# How long a new API token opens the API (its person may choose from 1 to API_TOKEN_MAX_DAYS).
API_TOKEN_DAYS = env_int("API_TOKEN_DAYS", 90, minimum=1)
API_TOKEN_MAX_DAYS = max(API_TOKEN_DAYS, env_int("API_TOKEN_MAX_DAYS", 365, minimum=1))
API_MAX_BYTES = env_int("API_MAX_BYTES", min(8 * 1024 * 1024, DATA_UPLOAD_MAX_MEMORY_SIZE), minimum=1024)
API_SYNC_MAX_RECORDS = env_int("API_SYNC_MAX_RECORDS", 200, minimum=1)
if API_MAX_BYTES > DATA_UPLOAD_MAX_MEMORY_SIZE:
    raise ImproperlyConfigured("API_MAX_BYTES must not exceed DATA_UPLOAD_MAX_MEMORY_SIZE")

# HTTPS: all off by default (`make run` serves plain HTTP on 127.0.0.1); see the README for a
# production environment, which `manage.py check --deploy` passes without a warning.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Behind a proxy that ends TLS: the header it sets, such as X-Forwarded-Proto (only when the
# proxy always sets or overwrites it, or clients could claim HTTPS).
_proxy_ssl_header = env_str("SECURE_PROXY_SSL_HEADER", "")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
X_FRAME_OPTIONS = "DENY"
# Every page runs under this policy: scripts, styles and everything else from our own origin
# only, no inline script or style (htmx's indicator style is in our stylesheet).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
if env_bool("CSP_REPORT_ONLY", False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY, CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY, None  # type: ignore[assignment]

# Celery: an embedded broker that needs no server (kombu's filesystem transport) by default.
# A host name, though the filesystem transport ignores it: without one kombu warns at every send.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")

# Django's cache: the API's rate per token is counted there. Local memory by default (one count
# per process); with several processes, CACHE_URL=redis://host:6379/1 shares it.
CACHE_URL = env_str("CACHE_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL.startswith(("redis://", "rediss://", "unix://"))
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "celery" / "queue"
    _processed_dir = VAR_DIR / "celery" / "processed"
    _queue_dir.mkdir(parents=True, exist_ok=True)
    _processed_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(_processed_dir),
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
    }
# Job state lives in our own tables; Celery's result store is not needed.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "attest")
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 1700, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# How many times a judge run's task is tried again after losing the database (evaluation.tasks).
JUDGE_DB_RETRIES = env_int("JUDGE_DB_RETRIES", 30, minimum=0)

# LLM judge and embeddings (any OpenAI-compatible server).
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "") or None
OPENAI_JUDGE_MODEL = env_str("OPENAI_JUDGE_MODEL", "gpt-4o-mini")
OPENAI_EMBEDDING_MODEL = env_str("OPENAI_EMBEDDING_MODEL", "text-embedding-3-small")
OPENAI_TIMEOUT_S = env_float("OPENAI_TIMEOUT_S", 60.0, minimum=0.1)
OPENAI_MAX_ATTEMPTS = env_int("OPENAI_MAX_ATTEMPTS", 5, minimum=1)
# Seconds the one call made before a judge run starts waits for the server (evaluation.judge.preflight).
JUDGE_PREFLIGHT_TIMEOUT_S = env_float("JUDGE_PREFLIGHT_TIMEOUT_S", 10.0, minimum=0.1)
JUDGE_CONCURRENCY = env_int("JUDGE_CONCURRENCY", 8, minimum=1)
JUDGE_PRICE_PER_1K_PROMPT = env_float("JUDGE_PRICE_PER_1K_PROMPT", 0.0, minimum=0.0)
JUDGE_PRICE_PER_1K_COMPLETION = env_float("JUDGE_PRICE_PER_1K_COMPLETION", 0.0, minimum=0.0)
EMBEDDING_BACKEND = env_str("EMBEDDING_BACKEND", "tfidf")
# The languages an import tells answers and questions apart among (plus each campaign's expected
# language): langdetect weighs every profile it has, so fewer candidates make imports several
# times faster. Texts none of them can read (another script) are decided among all 55 profiles.
LANGUAGE_CANDIDATES = env_list("LANGUAGE_CANDIDATES", ["fr", "en", "de", "es", "it", "nl", "pt"])
# Seconds between a human label and the recomputation of the estimates it triggers: labels that
# arrive meanwhile (an adjudication batch) are covered by the same recomputation.
ESTIMATES_REFRESH_DELAY_S = env_float("ESTIMATES_REFRESH_DELAY_S", 30.0, minimum=0.0)
# After an import, a judge run or a recomputation of the estimates, a worker computes the heavy
# pages' figures at their default parameters (evaluation/page_warming.py), where the cache is
# shared with the web processes (CACHE_URL) or tasks run eagerly.
PAGE_WARMING = env_bool("PAGE_WARMING", True)
# Milliseconds after a unit is painted during which the annotation pages ignore label keys: a key
# pressed twice by accident (two presses 30 ms apart) must not label a unit nobody has read.
LABEL_KEY_GUARD_MS = env_int("LABEL_KEY_GUARD_MS", 300, minimum=0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["tokens_hidden"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # One line per HTTP request to the LLM server drowns everything else.
    # (and django-axes' banner at every start; its lines about failed logins stay).
    "filters": {
        "refusals_without_traceback": {"()": "config.logs.RefusalsWithoutTraceback"},
        "tokens_hidden": {"()": "config.logs.TokensHidden"},
    },
    "loggers": {
        **{
            name: {"level": "WARNING"}
            for name in ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "axes.apps")
        },
        # A 403 or 404 is logged as one warning line, without the traceback of its exception.
        "django.request": {"filters": ["refusals_without_traceback"]},
        # WeasyPrint reads its own stylesheets when imported (three "Step 2" lines at every start)
        # and warns of each rule of app.css it does not draw (sticky headers, screen media
        # queries), which says nothing about the PDF.
        "weasyprint": {"level": "ERROR"},
    },
}
