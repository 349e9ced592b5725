"""The import format's page: for the people who prepare the files, in their language, with every
field the importer reads (taken from the importer's own lists, so that a field added without its
row here fails), its limits, examples and the usual refusals as the import words them."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from annotation import limits
from annotation.errors import refusal
from annotation.ingest import mapping, readers, records
from annotation.ingest.errors import MISSING
from tests.test_french_pages import Data, offences, visible_texts

URL = reverse("evaluation:import_format")

# Every key the importer reads, by where it reads it, and the id of its row on the page.
DOCUMENTED = [
    *(f"field-{name}" for name in records.RECORD_FIELDS),
    *(f"source-{name}" for name in records.SOURCE_FIELDS),
    *(f"sentence-{name}" for name in records.SENTENCE_FIELDS),
    *(f"gold-{name}" for name in records.GOLD_FIELDS),
    *(f"label-{name}" for name in records.LABEL_SOURCES),
    *(f"mapping-{name}" for name in mapping.SECTIONS),
    *(f"format-{suffix.lstrip('.')}" for suffix in readers.FORMATS),
]


@pytest.fixture
def page(client_for, manager):
    def read(language: str) -> str:
        response = client_for(manager).get(URL, HTTP_ACCEPT_LANGUAGE=language)
        assert response.status_code == 200
        return response.content.decode()

    return read


def test_every_field_the_importer_reads_has_its_row_on_the_page(page):
    english = page("en")
    missing = [anchor for anchor in DOCUMENTED if f'id="{anchor}"' not in english]
    assert missing == []
    for source in records.LABEL_SOURCES:
        # The label columns, which LABEL_COLUMN reads: human:NAME and llm:NAME.
        assert records.LABEL_COLUMN.match(f"{source}:relevance")
        assert f"<code>{source}:NAME</code>" in english


def test_the_page_in_french_has_no_english_paragraph(page):
    french, english = page("fr"), page("en")
    assert offences(french, data=Data(exact={"manager"})) == []  # the header names the user
    headings = [
        text for text in visible_texts(french) if text in ("Champs d’un enregistrement", "Refus courants")
    ]
    assert len(headings) >= 2
    assert "Fields of a record" in visible_texts(english)


def test_the_limits_are_the_importer_s_in_the_reader_s_numbers(page):
    french, english = page("fr"), page("en")
    assert limits.QUESTION == 20_000
    longest = 'data-label="Longest:">'
    assert f"{longest}20,000</td>" in english
    assert 'data-label="Au plus\u00a0:">20\u00a0000</td>' in french
    assert f'data-label="Au plus\u00a0:">{limits.DIFFICULTY}</td>' in french


def test_the_refusals_are_worded_as_the_import_words_them(page):
    french = page("fr")
    with translation.override("fr"):
        for message in (
            str(MISSING),
            str(refusal(records._("must be 0, 1 or empty, not %(value)s"), value="2")),
            str(
                refusal(
                    records._(
                        "byte 0x%(byte)s on line %(line)s is not UTF-8; "
                        "save the file as UTF-8 (a byte order mark is accepted)"
                    ),
                    byte="e9",
                    line=14,
                )
            ),
        ):
            assert message in french, message


def test_the_page_is_no_longer_the_repository_s_markdown(page):
    english = page("en")
    assert "docs/import-format.md" not in english
    assert "IMPORT_MAX_BYTES" not in english and "pass 1" not in english
    assert "## Fields" not in english
    assert reverse("evaluation:import_example") in english


def test_the_page_reads_the_session_and_the_user_only(client_for, manager, django_assert_num_queries):
    client = client_for(manager)
    with django_assert_num_queries(2):
        assert client.get(URL).status_code == 200
