"""What is labelled and how: criteria made and edited in the app (``editing``), binary or with
named categories and groups (``categories``), and their guidelines' recorded versions
(``guidelines``).
"""
