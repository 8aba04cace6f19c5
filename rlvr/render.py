"""The demos' tables as text and Markdown: the layout every demo's table shares, and the writer.

Each demo computes its own table (rlvr/demos/<name>.py: `table(frames, L)` -> (title, parts,
footer) or None when the results hold none of its data); this module lays them out. Inputs are
pandas DataFrames read from the Parquet files: reference (reference_passk), gradstats
(gradient_stats), runs, curves, passk (passk_trained), klgrad (kl_gradients), and task (for the
answer lengths, optional).
"""

import html

import numpy as np

from . import analysis as A
from . import claims as K
from .task import LEVEL_KEYS as LEVELS
from .text import display_width, pad

# the words every demo's table may use; a demo's own strings are its TEXT
LABELS = {
    "en": {"levels": {"very_hard": "very hard", "hard": "hard", "medium": "medium", "easy": "easy",
                      "all": "all"},
           "level": "level", "reference": "reference model", "other": "other settings",
           "never": "never", "crossed_some": "{k:.0f} ({n} of {N} seeds)"},
    "zh": {"levels": {"very_hard": "很难", "hard": "难", "medium": "中等", "easy": "容易", "all": "全部"},
           "level": "难度", "reference": "参考模型", "other": "其他设置",
           "never": "从不", "crossed_some": "{k:.0f}（{N} 个种子中 {n} 个）"},
}


def labels(lang, text, number):
    """The strings a demo's table reads: the shared LABELS and the demo's own text[lang], with
    "{number}" in them replaced by the demo's number."""
    own = {k: v.replace("{number}", str(number)) if isinstance(v, str) else v for k, v in text[lang].items()}
    return {**LABELS[lang], "lang": lang, **own}


def method_name(L, m):
    """A method's name in the tables of L's language: the one it was registered with."""
    from .estimators import ESTIMATORS

    return ESTIMATORS[m].table_label(L["lang"]) if m in ESTIMATORS else m


def levels_str(sub):
    """Final pass@1 per level, very hard to easy, as 'a / b / c / d' (means over seeds)."""
    return " / ".join(f"{sub[f'final_pass1_{k}'].mean():.2f}" for k in LEVELS)


def title(L, r, n, **more):
    """L["title"] filled from a run r of the experiment (method, lr, G, ...) and n seeds."""
    return L["title"].format(method=r["method"], lr=r["lr"], pps=int(r["prompts_per_step"]), G=int(r["G"]),
                             steps=int(r["steps"]), n=n, **more)


def delta(g, base, column, digits):
    """'Δ ± s.e.' of column against the same seeds of base (one configuration), '' without one."""
    if not len(base):
        return ""
    d = A.paired(g, base, column, on=("seed",))[column].to_numpy()
    return f"{np.mean(d):+.{digits}f} ± {A.se(d):.{digits}f}"


def crossover(g, L):
    """'below the reference from k' of one configuration's runs g (their crossover_k, 0: never):
    never, mean ± s.e. if every seed crosses, else the mean over the seeds that do and how many."""
    crossed = g["crossover_k"][g["crossover_k"] > 0]
    if not len(crossed):
        return L["never"]
    if len(crossed) == len(g):  # as many decimals as keep its s.e. from showing as 0
        return K.number(K.over_seeds(crossed), 0)
    return L["crossed_some"].format(k=crossed.mean(), n=len(crossed), N=len(g))


def with_others(head, rows, label):
    """Add the 'other settings' column where any row has other settings."""
    if any(r[-1] for r in rows):
        return head + [label], rows
    return head, [r[:-1] for r in rows]


def _text_table(head, rows):
    """Left-aligned columns, each as wide as its widest cell plus two spaces."""
    widths = [max(display_width(c) for c in col) + 2 for col in zip(head, *rows)]
    lines = [head] + rows
    return ["  " + "".join(pad(c, w) for c, w in zip(line, widths)).rstrip() for line in lines]


def _md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(demo):
    _, title, parts, footer = demo
    out = [f"## {title}", ""]
    for subtitle, head, rows in parts:
        if subtitle:
            out += [subtitle, ""]
        out += _md_table(head, rows) + [""]
    return "\n".join(out + footer) + "\n"


def render_text_one(demo):
    _, title, parts, footer = demo
    out = ["=" * 78, title, "=" * 78]
    for subtitle, head, rows in parts:
        if subtitle:
            out += ["", subtitle]
        out += _text_table(head, rows)
    return "\n".join(out + ["  " + f for f in footer]) + "\n"


def _html_table(head, rows):
    cells = lambda tag, row: "".join(f"<{tag}>{html.escape(str(c))}</{tag}>" for c in row)  # noqa: E731
    return (["<table>", f"<thead><tr>{cells('th', head)}</tr></thead>", "<tbody>"]
            + [f"<tr>{cells('td', row)}</tr>" for row in rows] + ["</tbody>", "</table>"])


HTML_STYLE = ("body{font-family:system-ui,sans-serif;font-size:14px;margin:1em}"
              "h1{font-size:16px}h2{font-size:14px;margin:1.2em 0 .4em}"
              "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
              "th,td{padding:2px 10px;text-align:left;white-space:nowrap}"
              "thead th{border-bottom:1px solid #444}tbody tr:nth-child(even){background:#f3f3f3}"
              "p{max-width:60em;color:#333}")


def render_html(demo):
    """The table as a page: its title, an HTML table per part (under its subtitle), its notes."""
    _, title, parts, footer = demo
    out = ['<!doctype html>', '<meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
           f"<style>{HTML_STYLE}</style>", f"<h1>{html.escape(title)}</h1>"]
    for subtitle, head, rows in parts:
        if subtitle:
            out.append(f"<h2>{html.escape(subtitle)}</h2>")
        out += _html_table(head, rows)
    if footer:
        out.append("<p>" + "<br>\n".join(html.escape(f) for f in footer) + "</p>")
    return "\n".join(out) + "\n"


# a table's files: text (terminals, all.txt), Markdown (papers' notes, GitHub), and HTML (a page
# with a real table per part: the HTML report shows it beside the demo's figures)
TABLE_FORMATS = {
    ".txt": lambda demo: render_text_one(demo),
    ".md": lambda demo: render_markdown(demo),
    ".html": lambda demo: render_html(demo),
}
