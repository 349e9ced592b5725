"""The longest text each field takes, in characters: one home for the limits that imports, the
API, the forms and the judge's replies share (docs/import-format.md, "Limits and speed").

A longer value is refused where it enters, naming its file, row and field (imports and the API's
batches) or its form field; a judge's reply is kept cut to its limit. The limits are far above
what real campaigns hold (a RAG answer is a few thousand characters, a retrieved chunk a few
thousand more) and low enough that no single page or prompt carries megabytes.
"""

from __future__ import annotations

# Ids and short labels: the columns' widths.
ID = 200
THEME = 200
DIFFICULTY = 50
# Texts of an import record.
QUESTION = 20_000
ANSWER = 100_000
# A sentence or paragraph of a pre-split answer can be as long as the answer it splits.
SENTENCE = ANSWER
PARAGRAPH = ANSWER
REFERENCE_ANSWER = ANSWER
SOURCE_TITLE = 1_000
SOURCE_TEXT = 200_000
GOLD_TEXT = SOURCE_TEXT
# Texts people write in the app.
COMMENT = 5_000
GUIDELINES = 50_000
JUDGE_PROMPT = 50_000
# What a judge's reply keeps: its text and its reasoning.
JUDGE_REPLY = 100_000
