"""The demo: its campaign and people (``campaign``), the five-category criterion with real numbers
(``categories``) and a second version of the assistant to compare by question (``versions``).
The material lives in the top-level ``demo/`` folder.
"""
