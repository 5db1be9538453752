"""PNG plots of benchmark results (matplotlib, headless): one function per figure, each returning its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from odqa._optional import require

__all__ = ["crawl_against_bound", "recall_curves", "scale_curves", "throughput_by_batch"]


def _pyplot() -> Any:
    require("matplotlib", "bench")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def throughput_by_batch(refine: dict[str, Any], path: Path) -> Path:
    """Encoder passages/s by batch size, one line per format, with the naive loop and odqa as reference lines."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for fmt in dict.fromkeys(r["format"] for r in refine["formats"]):
        rows = [r for r in refine["formats"] if r["format"] == fmt]
        name = fmt if " " in fmt else f"torch {fmt}"
        ax.plot([r["batch_size"] for r in rows], [r["passages_per_s"] for r in rows], marker="o",
                label=f"encoder {name} ({max(r['share_of_peak'] for r in rows):.0%} of {fmt.split()[-1]} peak at best)")
    colors = ("grey", "tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
    for (label, row), color in zip(refine["unique"]["runs"].items(), colors, strict=False):
        ax.axhline(row["passages_per_s"], linestyle=":", linewidth=1.2, color=color,
                   label=f"unique workload, {label}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("passages / s")
    ax.set_title("MiniLM encoding throughput by batch size and format", fontsize=10)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def recall_curves(quality: dict[str, Any], path: Path) -> Path:
    """Answer recall@k against k, one line per scorer, one panel per setting."""
    plt = _pyplot()
    settings = list(quality["results"])
    fig, axes = plt.subplots(1, len(settings), figsize=(5 * len(settings), 4), sharey=True, squeeze=False)
    for ax, setting in zip(axes[0], settings, strict=True):
        for scorer, row in quality["results"][setting].items():
            ks = sorted(int(k) for k in row["all"])
            ax.plot(ks, [row["all"][k] if k in row["all"] else row["all"][str(k)] for k in ks], marker=".",
                    label=scorer)
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("k")
        ax.set_title(f"TimeQA hard, {setting} ({quality['questions']} answerable questions)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("answer recall@k")
    axes[0][-1].legend(fontsize=8)
    return _save(plt, fig, path)


def crawl_against_bound(crawl: dict[str, Any], path: Path) -> Path:
    """Fetch pages/s against the bound that applies (concurrency / latency, lowered by politeness)."""
    plt = _pyplot()
    rows = crawl["fetch"]
    labels = [f"c={r['concurrency']}\nper host {r['per_host']}" + (f"\ndelay {r['delay_s']}" if r["delay_s"] else "")
              for r in rows]
    xs = range(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar([x - 0.2 for x in xs], [r["bound_pages_per_s"] for r in rows], width=0.4, label="bound", color="#bbb")
    ax.bar([x + 0.2 for x in xs], [r["pages_per_s"] for r in rows], width=0.4, label="measured")
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set_ylabel("pages / s")
    ax.set_title(f"crawl fetch throughput against the bound ({rows[0]['hosts']} hosts, "
                 f"{rows[0]['latency_s'] * 1000:.0f} ms latency)", fontsize=10)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def scale_curves(scale: dict[str, Any], path: Path) -> Path:
    """Peak memory and build time per passage against N (log scale), measured and projected to DPR's 21M."""
    plt = _pyplot()
    fig, (memory, time) = plt.subplots(1, 2, figsize=(11, 4))
    target = scale["projection_n"]
    for name, part in scale["rows"].items():
        rows = part["rows"]
        ns = [r["n"] for r in rows]
        for ax, key in ((memory, "build_peak_mb"), (time, "build_us_per_passage")):
            line = ax.plot(ns, [r[key] for r in rows], marker="o", label=f"{name} build")[0]
            ax.plot([ns[-1], target], [rows[-1][key], part["projection"][key]], linestyle=":",
                    color=line.get_color())
        line = memory.plot(ns, [r["search_peak_anon_mb"] for r in rows], marker="s", linestyle="--",
                           label=f"{name} search (anonymous: not page cache)")[0]
        memory.plot([ns[-1], target], [rows[-1]["search_peak_anon_mb"], part["projection"]["search_peak_anon_mb"]],
                    linestyle=":", color=line.get_color())
    for ax, label in ((memory, "peak RSS (MB)"), (time, "build time per passage (µs)")):
        ax.set_xscale("log")
        ax.axvline(target, color="grey", linewidth=0.8)
        ax.set_xlabel(f"passages (dotted: projected to {target:,})")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    memory.set_yscale("log")
    memory.legend(fontsize=7)
    memory.set_title("peak resident memory, each step in a fresh process", fontsize=9)
    time.set_title("build cost per passage (flat = linear in N)", fontsize=9)
    return _save(plt, fig, path)
