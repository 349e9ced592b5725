"""The retrieved sources of an answer as other tools write them: a chunk's text digest, and the
"##### [^id^] #####" blobs some exports carry their chunks in, read back into chunks."""

from __future__ import annotations

import hashlib
import re


def chunk_text_hash(text: str) -> str:
    """The digest that tells a chunk's texts apart (SourceChunk.text_hash): SHA-256 of its UTF-8
    text, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_BLOB_HEADER = re.compile(r"#####[ \t]*\[\^(.*?)\^\][ \t]*#####")
_SOURCE_LINE = re.compile(r"source[ \t]*:(.*)", re.IGNORECASE)
_SOURCE_PAGE = re.compile(r"^(.*?)[ \t]*\((?:page|pages|p\.)[ \t]*(\d+)[ \t]*\)$", re.IGNORECASE)
_PAGE_LINE = re.compile(r"page[ \t]*:(.*)", re.IGNORECASE)


def parse_source_blob(blob: str) -> list[dict]:
    """Chunks of the assistant's source text, in order, as ``{"id", "title", "page", "text"}``.

    Each chunk is a header line ``##### [^ID^] #####``, a line ``Source: TITLE`` (the title may
    end with ``(page N)``, or a ``Page: N`` line may follow), a blank line, then the text up to the
    next header (stripped; inner blank lines kept). ``page`` is an int or None. A blank blob gives
    ``[]``. Raises ValueError naming the chunk number and line on text before the first header, a
    missing or empty Source line, an empty or duplicate id, or a page that is not a whole number.
    """
    chunks: list[dict] = []
    first_chunk_of: dict[str, int] = {}
    body: list[str] = []
    expecting = ""  # "source", then "page", then "" (text)

    def where(line_number: int) -> str:
        return f"source chunk {len(chunks)} ([^{chunks[-1]['id']}^]) at line {line_number}"

    def close_chunk() -> None:
        if chunks:
            chunks[-1]["text"] = "\n".join(body).strip()
            body.clear()

    lines = blob.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        header = _BLOB_HEADER.fullmatch(line)
        if header:
            if expecting == "source":
                raise ValueError(f"{where(number)}: missing 'Source: TITLE' line before the next header")
            close_chunk()
            chunk_id = header.group(1).strip()
            number_of_chunk = len(chunks) + 1
            if not chunk_id:
                raise ValueError(f"source chunk {number_of_chunk} at line {number}: empty id in {line!r}")
            if chunk_id in first_chunk_of:
                raise ValueError(
                    f"source chunk {number_of_chunk} ([^{chunk_id}^]) at line {number}: duplicate id "
                    f"{chunk_id!r} (already the id of chunk {first_chunk_of[chunk_id]})"
                )
            first_chunk_of[chunk_id] = number_of_chunk
            chunks.append({"id": chunk_id, "title": "", "page": None, "text": ""})
            expecting = "source"
            continue
        if not chunks:
            if line:
                raise ValueError(
                    f"source text: line {number} comes before the first '##### [^ID^] #####' header: "
                    f"{line[:60]!r}"
                )
            continue
        if expecting == "source":
            if not line:
                continue
            source = _SOURCE_LINE.fullmatch(line)
            if not source:
                raise ValueError(f"{where(number)}: expected a 'Source: TITLE' line, found {line[:60]!r}")
            title, page = source.group(1).strip(), None
            with_page = _SOURCE_PAGE.match(title)
            if with_page:
                title, page = with_page.group(1).strip(), int(with_page.group(2))
            if not title:
                raise ValueError(f"{where(number)}: empty title in the Source line")
            chunks[-1]["title"], chunks[-1]["page"] = title, page
            expecting = "page"
            continue
        if expecting == "page":
            expecting = ""
            page_line = _PAGE_LINE.fullmatch(line)
            if page_line:
                value = page_line.group(1).strip()
                if not value.isdigit():
                    raise ValueError(f"{where(number)}: page {value!r} is not a whole number")
                chunks[-1]["page"] = int(value)
                continue
        body.append(raw)
    if expecting == "source":
        raise ValueError(f"{where(len(lines))}: missing 'Source: TITLE' line")
    close_chunk()
    return chunks
