"""Headless Chromium (the Debian ``chromium`` and ``chromium-driver`` packages) driven by Selenium, for the report's
real-browser test and ``odqa bench report``. Browser downloads fail here, so only the system binaries are used."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("ODQA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ODQA_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars")


def missing() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (Path(path).is_file() or shutil.which(path)):
            return f"{path} not found: apt-get install -y {package}"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[dev]'"
    return None


def headless_chromium(profile: Path, width: int = 1400, height: int = 1000) -> Any:
    """A Selenium driver for headless Chromium with a fresh profile folder, nothing fetched from the network."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
