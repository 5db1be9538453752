"""``odqa report``: one self-contained HTML page (and its data as JSON) showing what retrieval and reading did,
question by question, for one or more runs side by side."""

from __future__ import annotations

from odqa.report.data import REPORT_FORMAT, RunSpec, build_report_data
from odqa.report.html import render_html
from odqa.report.run import ReportConfig, ReportSummary, write_report

__all__ = ["REPORT_FORMAT", "ReportConfig", "ReportSummary", "RunSpec", "build_report_data", "render_html",
           "write_report"]
