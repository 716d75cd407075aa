"""Plumbing every part may use: the event loop, stdout and pipe writers, the JSON codec, redaction.

Imports nothing of ours (import-linter holds this), so any layer can lean on it.
"""
