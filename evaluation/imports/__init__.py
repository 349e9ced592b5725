"""A campaign file in our own format: checked, previewed (``previews``), then written with its
judge labels (``campaign_file``), through ``annotation.ingest``.
"""
