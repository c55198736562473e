"""The P4_16 front end: preprocessor, lexer, parser, semantic passes, P4Info and the JSON IR.

The pipeline is a sequence of small passes over plain dataclass trees (docs/frontend.md).
"""
