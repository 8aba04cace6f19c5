"""Plain-text table helpers that respect East Asian display width."""

import unicodedata


def display_width(text):
    """Columns text takes in a terminal: wide and full-width characters count two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in str(text))


def pad(text, width):
    """text padded with spaces on the right to `width` display columns."""
    text = str(text)
    return text + " " * max(0, width - display_width(text))


def number(x):
    """x as `:g` writes it, and ∞ for infinity (a clip side set to null: no clip), not "inf"."""
    return "∞" if x == float("inf") else f"{x:g}"
