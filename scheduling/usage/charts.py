"""Plotly figures built in Python from selector output; pages receive them as JSON (json_script).

Tests read the figures' data (traces, names, values), never pixels.
"""

import plotly.graph_objects as go
import plotly.io as pio

from quotas.selectors import RESOURCE_LABELS
from scheduling.usage.models import RESOURCES

PALETTE = [
    "#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#65a30d", "#db2777", "#4f46e5",
    "#ca8a04", "#94a3b8",
]  # fmt: skip
WITHIN = "#2563eb"
BORROWED = "#f59e0b"
QUOTA = "#111827"
FAIR = "#9333ea"
LENT = "#16a34a"


def _iso(values) -> list:
    """Times as ISO strings, once per series: much faster to serialize than datetimes."""
    return [v.isoformat() if hasattr(v, "isoformat") else v for v in values]


GRID = {"gridcolor": "#eef0f3", "zerolinecolor": "#d9dde3", "linecolor": "#d9dde3"}


def _layout(title: str, y_title: str, **extra) -> dict:
    # Explicit colours instead of a Plotly template: a template embeds ~30 kB in every figure.
    return dict(
        paper_bgcolor="white",
        plot_bgcolor="white",
        font={"family": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", "size": 12, "color": "#374151"},
        title={"text": title, "x": 0, "font": {"size": 15}},
        margin={"l": 55, "r": 15, "t": 45, "b": 40},
        height=340,
        hovermode="x unified",
        legend={"orientation": "h", "y": -0.18, "traceorder": "normal"},
        yaxis={"title": {"text": y_title}, "rangemode": "tozero", **GRID},
        xaxis={"type": "date", **GRID},
        **extra,
    )


def _note(fig: go.Figure, text: str) -> go.Figure:
    """Say in the plot why it is flat, so a chart of zeros never reads as a chart that failed to draw."""
    fig.add_annotation(text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5, font={"color": "#6b7280"})
    return fig


def unit(resource: str) -> str:
    return RESOURCES[resource]


def team_usage_figure(
    series: dict, *, resource: str = "acc", unit_label: str | None = None, title: str = "Usage against quota"
) -> go.Figure:
    """Stacked area: the part within quota, the borrowed part on top of it; the quota, the idle quota lent to
    other teams and the fair share as lines. One resource per figure (GPUs or Neuron devices, never both)."""
    x = _iso(series["x"])
    within = [max(u - b, 0) for u, b in zip(series["used"], series["borrowed"], strict=True)]
    fig = go.Figure(
        [
            go.Scatter(x=x, y=within, name="within quota", stackgroup="used", line={"color": WITHIN, "width": 1}),
            go.Scatter(
                x=x,
                y=series["borrowed"],
                name="borrowed",
                stackgroup="used",
                line={"color": BORROWED, "width": 1},
                fillpattern={"shape": "/"},
            ),
            go.Scatter(
                x=x, y=series["quota"], name="quota", mode="lines", line={"color": QUOTA, "dash": "dash", "shape": "hv"}
            ),
            go.Scatter(
                x=x,
                y=series["lent"],
                name="lent to others",
                mode="lines",
                line={"color": LENT, "dash": "dashdot", "width": 1.5},
            ),
            go.Scatter(
                x=x,
                y=series["fair_share"],
                name="fair share",
                mode="lines",
                line={"color": FAIR, "dash": "dot", "width": 1.5},
            ),
        ],
        layout=_layout(title, unit_label or unit(resource)),
    )
    if series["x"] and not any(series["used"]):
        _note(fig, "None in use in this range")
    return fig


def teams_stack_figure(
    data: dict,
    *,
    resource: str = "acc",
    unit_label: str | None = None,
    capacity: float | None = None,
    borrowed: dict | None = None,
) -> go.Figure:
    """Stacked area of usage per team (the biggest users; the rest as 'other teams'), with the capacity line and,
    given the totals, the part of the usage that is borrowed. One resource per figure."""
    x = _iso(data["x"])
    traces = [
        go.Scatter(
            x=x,
            y=values,
            name=name,
            stackgroup="teams",
            line={"width": 0.5, "color": PALETTE[i % len(PALETTE)]},
        )
        for i, (name, values) in enumerate(data["series"].items())
    ]
    if capacity and data["x"]:
        traces.append(
            go.Scatter(
                x=[x[0], x[-1]],
                y=[capacity, capacity],
                name="installed capacity",
                mode="lines",
                line={"color": QUOTA, "dash": "dash"},
            )
        )
    if borrowed is not None and data["x"]:
        traces.append(
            go.Scatter(
                x=_iso(borrowed["x"]),
                y=borrowed["borrowed"],
                name="borrowed (all teams)",
                mode="lines",
                line={"color": BORROWED, "dash": "dot", "width": 1.5},
            )
        )
    label = unit_label or unit(resource)
    title = f"{label} in use by team" if unit_label else "Usage by team"
    fig = go.Figure(traces, layout=_layout(title, label))
    if not any(any(values) for values in data["series"].values()):
        _note(fig, "None in use in this range")
    return fig


def utilization_figure(data: dict) -> go.Figure:
    """Cluster utilization per instance type: % of installed capacity in use."""
    x = _iso(data["x"])
    traces = [
        go.Scatter(x=x, y=values, name=name, mode="lines", line={"color": PALETTE[i % len(PALETTE)]})
        for i, (name, values) in enumerate(data["series"].items())
    ]
    layout = _layout("Cluster utilization by instance type", "% of capacity")
    layout["yaxis"]["range"] = [0, 105]
    fig = go.Figure(traces, layout=layout)
    if not traces:
        installed = data.get("installed", True)
        _note(fig, "No usage recorded in this range" if installed else "None of it installed on these instance types")
    return fig


def pending_figure(facets: list[tuple[str, dict]], waits: dict) -> go.Figure:
    """Pending demand over time, a line per facet (GPUs apart from Neuron devices; left axis), and the average
    wait of the jobs admitted (right axis)."""
    colours = [BORROWED, *PALETTE]
    lines = [
        go.Scatter(
            x=_iso(series["x"]),
            y=series["pending"],
            name=f"pending {label}",
            mode="lines",
            fill="tozeroy" if i == 0 else None,
            line={"color": colours[i % len(colours)]},
        )
        for i, (label, series) in enumerate(facets)
    ]
    fig = go.Figure(
        [
            *lines,
            go.Bar(
                x=_iso(waits["x"]),
                y=waits["avg_minutes"],
                name="average wait (min)",
                yaxis="y2",
                marker={"color": "rgba(37,99,235,0.45)"},
                customdata=waits["jobs"],
                hovertemplate="%{y} min over %{customdata} jobs",
            ),
        ],
        layout=_layout("Pending demand and wait times", " · ".join(label for label, _ in facets)),
    )
    fig.update_layout(yaxis2={"title": {"text": "minutes"}, "overlaying": "y", "side": "right", "rangemode": "tozero"})
    if not any(any(series["pending"]) for _, series in facets) and not any(waits["avg_minutes"]):
        admitted = sum(waits["jobs"])
        _note(fig, f"Nothing waited in this range: {admitted} jobs started as submitted" if admitted else "No waits")
    return fig


def preemptions_figure(data: dict) -> go.Figure:
    x = _iso(data["x"])
    traces = [
        go.Bar(x=x, y=values, name=name, marker={"color": PALETTE[i % len(PALETTE)]})
        for i, (name, values) in enumerate(data["series"].items())
    ]
    layout = _layout("Preemptions by team", "preemptions", barmode="stack")
    layout["hovermode"] = "closest"
    if not traces:
        layout["annotations"] = [
            {
                "text": "No preemptions in this range",
                "showarrow": False,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "font": {"color": "#6b7280"},
            }
        ]
    return go.Figure(traces, layout=layout)


def team_hours_figure(totals: list[dict]) -> go.Figure:
    """Accelerator-hours per team as horizontal bars: within quota, then borrowed, beside the quota hours. A bar
    per team and accelerator resource: GPU-hours and Neuron device-hours are never added together."""
    rows = [t for t in reversed(totals) if t["resource"]]
    units = sorted({t["unit"] for t in rows})
    several = len(units) > 1
    bars = [f"{t['team']} · {RESOURCE_LABELS[t['resource']]}" if several else t["team"] for t in rows]
    fig = go.Figure(
        [
            go.Bar(
                y=bars, x=[t["within"] for t in rows], name="within quota", orientation="h", marker={"color": WITHIN}
            ),
            go.Bar(
                y=bars,
                x=[t["borrowed"] for t in rows],
                name="borrowed",
                orientation="h",
                marker={"color": BORROWED, "pattern": {"shape": "/"}},
            ),
            go.Scatter(
                y=bars,
                x=[t["quota"] for t in rows],
                name="quota hours",
                mode="markers",
                marker={"symbol": "line-ns-open", "size": 18, "color": QUOTA, "line": {"width": 2}},
            ),
        ],  # fmt: skip
        layout=_layout("Accelerator-hours by team", "", barmode="stack"),
    )
    fig.update_layout(
        height=max(240, 110 + 26 * len(bars)),
        margin={"l": 55, "r": 15, "t": 45, "b": 95},
        # the legend in the figure's own bottom margin, below the axis title, however narrow the screen
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "traceorder": "normal"},
        hovermode="y unified",
        xaxis={"type": "linear", "title": {"text": "device-hours" if several else (units or ["accelerator-hours"])[0]}},
        yaxis={"title": None},
    )
    return fig


def as_json(fig: go.Figure) -> str:
    """The figure as a JSON string, serialized once (pages embed it with the figure_script tag)."""
    return pio.to_json(fig, validate=False)
