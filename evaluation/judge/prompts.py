"""Versioned judge prompts: the annotation guidelines humans get, framed for an LLM.

French by default, English available. A prompt asks for one JSON object
``{"verdicts": [{"index": int, "reasoning": str, "label": 0 | 1}]}`` with exactly one verdict per
index listed on the user message's ``INDICES: [...]`` line. That line is machine-findable on
purpose: the parser checks the reply against it and a scripted test server answers from it.

Built-in prompts are versioned: ``PROMPTS_BY_VERSION`` (``evaluation.judge.prompt_texts``, with
every text) keeps every released version, and a judge
names the one it uses, so judgments made with different prompts are never mixed. Changing any
text of a released version changes what its judges see: add a new version instead.

A campaign criterion other than the built-in veracity, relevance and citation support is judged
with a generic framing around its own guidelines (sentence by sentence, citation by citation, or
on the whole answer); a criterion's own ``judge_prompt`` replaces the framing (role and method)
of any criterion. The output instructions and the data are always ours: the parser depends on
them.

Release v2 brought the citation level (citation support, and the generic framing of citation-level
criteria) and leaves v1's texts as they were; a v1 judge is refused on a citation-level criterion
(``MissingPrompt``): its release has no prompt for it.
"""

from __future__ import annotations

import json

from annotation.corpus.conventions import BUILTIN_CRITERIA
from evaluation.judge.prompt_texts import (
    CATEGORY_TEXT,
    PROMPT_VERSIONS,
    PROMPTS_BY_VERSION,
    SUPPORTED_LANGUAGES,
    VERBAL_CONFIDENCE,
)

PROMPT_VERSION = "v2"
BUILTIN_LEVELS = {name: spec["level"] for name, spec in BUILTIN_CRITERIA.items()}
DEFAULT_LANGUAGE = "fr"
# The levels a campaign's own criterion may have, each with its generic framing.
LEVELS = ("sentence", "answer", "citation")


def verdict_schema(labels: tuple[int, ...] = (0, 1)) -> dict:
    """The JSON schema of a reply whose labels are ``labels`` (0 and 1, or a categorical
    criterion's category values)."""
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer"},
                        "reasoning": {"type": "string"},
                        "label": {"type": "integer", "enum": [int(label) for label in labels]},
                    },
                    "required": ["index", "reasoning", "label"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    }


VERDICT_JSON_SCHEMA: dict = verdict_schema()


def verbal_confidence_line(language: str | None) -> str:
    """The line that asks a judge with verbalised confidence for it (evaluation.judge.confidence)."""
    return VERBAL_CONFIDENCE[normalise_language(language)]


class MissingPrompt(ValueError):
    """A released prompt version older than the criterion's level: it has no prompt for it."""


def check_version(version: str | None) -> str:
    """``version`` when it is a released prompt version (None gives the current one).

    Raises ``ValueError`` naming the known versions otherwise.
    """
    version = version or PROMPT_VERSION
    if version not in PROMPTS_BY_VERSION:
        raise ValueError(
            f"prompt version {version!r} is unknown; known versions: {', '.join(PROMPT_VERSIONS)}"
        )
    return version


def normalise_language(language: str | None) -> str:
    """The prompt language for ``language``: ``fr`` or ``en``.

    Regional tags are reduced to their language (``fr-FR`` -> ``fr``); ``None`` or an empty string
    gives the default (French). Any other language gets the English prompt, since the judge must
    still run on a campaign whose answers are in, say, German.
    """
    code = (language or DEFAULT_LANGUAGE).strip().lower().replace("_", "-").split("-")[0]
    return code if code in SUPPORTED_LANGUAGES else "en"


def indices_line(indices: list[int]) -> str:
    """The machine-findable line listing the indices a reply must cover: ``INDICES: [0, 1, 2]``."""
    return f"INDICES: {json.dumps([int(i) for i in indices])}"


def _system_message(
    *,
    criterion: str,
    guidelines: str | None,
    lang: str,
    version: str = PROMPT_VERSION,
    instructions: str | None = None,
    title: str = "",
    categories: list[tuple[int, str]] | None = None,
) -> dict:
    """``criterion`` is a built-in one (``veracity``, ``relevance``, ``citation_support``) or a
    generic level (``sentence``, ``answer``, ``citation``) for a campaign's own criterion, named
    by ``title``. ``categories``: (value, title) of a categorical criterion's categories, whose
    values the labels are (then ``criterion`` is a generic level)."""
    version = check_version(version)
    release = PROMPTS_BY_VERSION[version]
    text = release["text"][lang]
    if f"{criterion}_role" not in text:
        raise MissingPrompt(
            f"prompt version {version!r} has no prompt for {criterion!r}; "
            f"a judge on version {PROMPT_VERSION!r} has one"
        )
    if criterion in BUILTIN_LEVELS and not categories:
        rules = guidelines or release["guidelines"][criterion][lang]
    else:
        rules = guidelines or text["no_guidelines"]
    framed = CATEGORY_TEXT[lang]
    method = framed[f"categories_{criterion}_method"] if categories else text[f"{criterion}_method"]
    framing = (
        [instructions.strip()]
        if instructions and instructions.strip()
        else [text[f"{criterion}_role"].format(title=title), method]
    )
    listed = (
        [framed["categories"] + "\n" + "\n".join(f"{value}: {name}" for value, name in categories)]
        if categories
        else []
    )
    output = (
        framed["categories_output"].replace("{values}", ", ".join(str(value) for value, _ in categories))
        if categories
        else text["output"]
    )
    parts = [
        framing[0],
        f"{text['guidelines']}\n{rules.strip()}",
        *listed,
        *framing[1:],
        text["data_not_instructions"],
        output,
    ]
    return {"role": "system", "content": "\n\n".join(parts)}


def _format_source(source: dict, *, text: dict[str, str]) -> str:
    lines = ["<source>", f"{text['source_id']} {source.get('id', '')}"]
    if source.get("title"):
        lines.append(f"{text['source_title']} {source['title']}")
    if source.get("page") not in (None, ""):
        lines.append(f"{text['source_page']} {source['page']}")
    lines += [text["source_text"], str(source.get("text") or "").strip(), "</source>"]
    return "\n".join(lines)


def _format_sentences(
    sentences: list[dict], *, text: dict[str, str], tag: str = "sentence", cites: str = "cites"
) -> str:
    # Consecutive sentences of one paragraph share a single copy of it: a long answer would
    # otherwise send each paragraph once per sentence.
    blocks: list[str] = []
    current_paragraph: str | None = None
    for sentence in sentences:
        paragraph = str(sentence.get("paragraph") or "").strip()
        if paragraph != current_paragraph:
            if current_paragraph:
                blocks.append("</paragraph>")
            if paragraph:
                blocks.append(f"<paragraph>\n{paragraph}")
            current_paragraph = paragraph
        lines = [f'<{tag} index="{int(sentence["index"])}">', str(sentence["text"]).strip()]
        if sentence.get("cited_ids") is not None:
            cited = ", ".join(str(c) for c in sentence["cited_ids"]) or "-"
            lines.append(f"({text[cites]} {cited})")
        lines.append(f"</{tag}>")
        blocks.append("\n".join(lines))
    if current_paragraph:
        blocks.append("</paragraph>")
    return "\n".join(blocks)


def _sentences_user(
    *, question: str, sources: list[dict], sentences: list[dict], text: dict, citations: bool = False
) -> str:
    """The user message of sentence units, or with ``citations`` of citation units: each item a
    sentence and the one source id of its citation (``cited_ids``), the sources sent once."""
    if not sentences:
        raise ValueError("sentences: at least one sentence is needed")
    indices = [int(s["index"]) for s in sentences]
    if len(set(indices)) != len(indices):
        raise ValueError(f"sentences: indices must be distinct, got {indices}")
    sources_block = "\n\n".join(_format_source(s, text=text) for s in sources) or text["no_sources"]
    if citations:
        items = f"{text['citations']}\n" + _format_sentences(
            sentences, text=text, tag="citation", cites="citation_source"
        )
    else:
        items = f"{text['sentences']}\n{_format_sentences(sentences, text=text)}"
    return "\n\n".join(
        [
            f"{text['question']}\n{question.strip()}",
            f"{text['sources']}\n{sources_block}",
            items,
            f"{text['indices']}\n{indices_line(indices)}",
        ]
    )


def _answer_user(*, question: str, answer: str, text: dict) -> str:
    return "\n\n".join(
        [
            f"{text['question']}\n{question.strip()}",
            f"{text['answer']}\n<answer>\n{answer.strip()}\n</answer>",
            f"{text['indices']}\n{indices_line([0])}",
        ]
    )


def build_veracity_messages(
    *,
    question: str,
    sources: list[dict],
    sentences: list[dict],
    guidelines: str | None = None,
    language: str = DEFAULT_LANGUAGE,
    version: str = PROMPT_VERSION,
    instructions: str | None = None,
) -> list[dict]:
    """Chat messages asking for the veracity of every sentence of ONE answer.

    ``sources`` are the cited sources in full (``{"id", "title", "page", "text"}``), sent once for
    all sentences. ``sentences`` are ``{"index", "text", "paragraph"}`` (an optional ``cited_ids``
    list is shown when given); their indices must be distinct integers. ``guidelines`` replaces
    the default guidelines of the criterion; ``instructions`` (a criterion's own prompt) replaces
    the framing; ``language`` picks the prompt's language (see ``normalise_language``) and
    ``version`` the released prompt (``check_version``). The user message ends with the
    ``INDICES: [...]`` line.
    """
    lang = normalise_language(language)
    text = PROMPTS_BY_VERSION[check_version(version)]["text"][lang]
    user = _sentences_user(question=question, sources=sources, sentences=sentences, text=text)
    return [
        _system_message(
            criterion="veracity", guidelines=guidelines, lang=lang, version=version, instructions=instructions
        ),
        {"role": "user", "content": user},
    ]


def build_citation_support_messages(
    *,
    question: str,
    sources: list[dict],
    citations: list[dict],
    guidelines: str | None = None,
    language: str = DEFAULT_LANGUAGE,
    version: str = PROMPT_VERSION,
    instructions: str | None = None,
) -> list[dict]:
    """Chat messages asking, for every citation of ONE answer, whether its one source supports at
    least part of its sentence.

    ``citations`` are ``{"index", "text", "paragraph", "cited_ids"}``, ``cited_ids`` the one id of
    the citation's source; ``sources`` the cited sources in full, sent once for all citations.
    The other arguments as for ``build_veracity_messages``; the user message ends with the
    ``INDICES: [...]`` line.
    """
    lang = normalise_language(language)
    text = PROMPTS_BY_VERSION[check_version(version)]["text"][lang]
    user = _sentences_user(question=question, sources=sources, sentences=citations, text=text, citations=True)
    return [
        _system_message(
            criterion="citation_support",
            guidelines=guidelines,
            lang=lang,
            version=version,
            instructions=instructions,
        ),
        {"role": "user", "content": user},
    ]


def build_relevance_messages(
    *,
    question: str,
    answer: str,
    guidelines: str | None = None,
    language: str = DEFAULT_LANGUAGE,
    version: str = PROMPT_VERSION,
    instructions: str | None = None,
) -> list[dict]:
    """Chat messages asking for the relevance of one whole answer: a single verdict of index 0.

    ``guidelines``, ``instructions``, ``language`` and ``version`` as for
    ``build_veracity_messages``. The user message ends with ``INDICES: [0]``.
    """
    lang = normalise_language(language)
    text = PROMPTS_BY_VERSION[check_version(version)]["text"][lang]
    return [
        _system_message(
            criterion="relevance",
            guidelines=guidelines,
            lang=lang,
            version=version,
            instructions=instructions,
        ),
        {"role": "user", "content": _answer_user(question=question, answer=answer, text=text)},
    ]


def build_criterion_messages(
    *,
    title: str,
    level: str,
    question: str,
    answer: str = "",
    sources: list[dict] | None = None,
    sentences: list[dict] | None = None,
    guidelines: str | None = None,
    instructions: str | None = None,
    language: str = DEFAULT_LANGUAGE,
    version: str = PROMPT_VERSION,
    categories: list[tuple[int, str]] | None = None,
) -> list[dict]:
    """Chat messages for a campaign's own criterion called ``title``, judged with its guidelines.

    ``level`` ``sentence``: every sentence of one answer, with its cited sources, as for veracity;
    ``citation``: every citation of one answer (``sentences`` holds them), as for citation
    support; ``answer``: the question and the whole answer, one verdict of index 0, as for
    relevance. ``instructions`` (the criterion's own prompt) replaces the generic framing.
    ``categories``: the (value, title) of a categorical criterion, listed for the judge, whose
    labels are their values.
    """
    if level not in LEVELS:
        raise ValueError(f"level: {level!r} is not one of {', '.join(LEVELS)}")
    lang = normalise_language(language)
    text = PROMPTS_BY_VERSION[check_version(version)]["text"][lang]
    if level in ("sentence", "citation"):
        user = _sentences_user(
            question=question,
            sources=sources or [],
            sentences=sentences or [],
            text=text,
            citations=level == "citation",
        )
    else:
        user = _answer_user(question=question, answer=answer, text=text)
    return [
        _system_message(
            criterion=level,
            guidelines=guidelines,
            lang=lang,
            version=version,
            instructions=instructions,
            title=title,
            categories=categories,
        ),
        {"role": "user", "content": user},
    ]


def system_prompt(
    *,
    name: str,
    level: str,
    title: str = "",
    guidelines: str | None = None,
    instructions: str | None = None,
    language: str = DEFAULT_LANGUAGE,
    version: str = PROMPT_VERSION,
    categories: list[tuple[int, str]] | None = None,
) -> str:
    """The system message sent for criterion ``name`` (at ``level``), as the builders above write
    it: the prompt's template of ``version`` in ``language`` around ``guidelines`` (None or blank:
    the built-in ones) and ``instructions`` (None or blank: the built-in framing). A built-in
    criterion at its own level gets its own prompt; any other one, and any categorical one
    (``categories``, as for ``build_criterion_messages``), the generic prompt of its level."""
    kind = name if BUILTIN_LEVELS.get(name) == level and not categories else level
    if kind not in (*BUILTIN_LEVELS, *LEVELS):
        raise ValueError(f"level: {level!r} is not one of {', '.join(LEVELS)}")
    return _system_message(
        criterion=kind,
        guidelines=guidelines or None,
        lang=normalise_language(language),
        version=version,
        instructions=(instructions or "").strip() or None,
        title=title or name,
        categories=categories or None,
    )["content"]
