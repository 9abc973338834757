"""Read the figures a page shows: every element with a data-n="key" attribute, by key, as text."""

from html.parser import HTMLParser

VOID = {"br", "img", "input", "meta", "link", "hr", "source", "col", "wbr"}


class _Figures(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str | None] = []  # the data-n key each open element started, or None
        self.open: dict[str, list[str]] = {}
        self.figures: dict[str, str] = {}

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        key = dict(attrs).get("data-n")
        self.stack.append(key)
        if key is not None:
            assert key not in self.figures and key not in self.open, f"data-n={key!r} appears twice"
            self.open[key] = []

    def handle_endtag(self, tag):
        if tag in VOID or not self.stack:
            return
        key = self.stack.pop()
        if key is not None:
            self.figures[key] = " ".join(" ".join(self.open.pop(key)).split())

    def handle_data(self, data):
        for parts in self.open.values():
            parts.append(data)


def figures(html: str | bytes) -> dict[str, str]:
    parser = _Figures()
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    return parser.figures


def number(text: str) -> float:
    """The first number in a figure's text: '1,234.5 GPU' -> 1234.5."""
    import re

    match = re.search(r"-?[\d,]*\.?\d+", text)
    assert match, f"no number in {text!r}"
    return float(match.group().replace(",", ""))


def amounts(text: str) -> dict[str, float]:
    """'8 GPU 16 Neuron' -> {'GPU': 8, 'Neuron': 16} (the team list's per-resource totals)."""
    words = text.split()
    return {words[i + 1]: float(words[i]) for i in range(0, len(words) - 1, 2)}
