"""The API's pages of rows: django-ninja's page numbers, bounded so that a page number no list
reaches is an empty page rather than an offset the database refuses (SQLite's offsets are 64-bit
integers: page 10^27 of 200 rows overflowed into a 500)."""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import PageNumberPagination

# Past any list the API serves (10^9 pages of rows), and far inside a 64-bit offset.
MAX_PAGE = 10**9


class Pages(PageNumberPagination):
    class Input(Schema):
        page: int = Field(1, ge=1, le=MAX_PAGE)
        page_size: int | None = Field(None, ge=1, le=MAX_PAGE)
