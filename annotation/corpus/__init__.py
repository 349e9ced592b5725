"""The texts and the conventions they follow: campaigns and their built-in criteria, how answers
cite their sources (one compiled pattern), sentence splitting, source blobs, language detection.

- ``conventions``: the citation and abstention patterns and the built-in criteria, Django-free;
- ``campaigns``: creating a campaign with its built-in criteria;
- ``citations``: the one compiled citation pattern, the ids a text cites, citation units;
- ``sentences``: an answer cut into sentences that keep their citations and paragraph;
- ``sources``: chunk digests and the source blobs other tools write;
- ``language``: the language of an answer (langdetect, deterministic).
"""
