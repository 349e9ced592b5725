"""What a page shows when it reads more than one model: the campaigns' overview, the start page
of each role, and one unit whole with its labels and judgments.
"""
