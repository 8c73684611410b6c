"""The explanation page in a real browser: headless Chromium (Debian's ``chromium``, installed
by ``.ci/browser``) opens the page from a file, offline, and renders it to PNG; the picture must
not be blank and the DOM it built must hold the hostile name as text, not as an element.

Without a browser this fails (CI must not pass by skipping it); set
``GRAPHRECALL_NO_BROWSER=1`` to skip it on a machine without one.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from graphrecall.context import ContextBlock
from graphrecall.explain import to_html
from test_explain_pictures import EVIL, sample

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("GRAPHRECALL_NO_BROWSER") == "1":
        pytest.skip("GRAPHRECALL_NO_BROWSER=1: no headless browser test")
    pytest.fail(
        "no headless browser found (looked for chromium, chromium-browser, google-chrome): "
        "install Debian's chromium with `.ci/browser` (apt-get install -y chromium), or set "
        "GRAPHRECALL_NO_BROWSER=1 to skip this test on this machine",
        pytrace=False,
    )


def run_browser(exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    cmd += ["--disable-extensions", "--hide-scrollbars", f"--user-data-dir={cwd / 'profile'}"]
    done = subprocess.run(
        [*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, head = 8, b"", b""
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + size]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + size
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", head)
    assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
    bpp = 4 if color == 6 else 3
    raw, stride = zlib.decompress(idat), width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def test_the_page_renders_in_a_headless_browser(tmp_path: Path) -> None:
    exe = browser()
    res = sample(evil=EVIL, n_facts=8)
    ctx = ContextBlock(
        text="- Ned Stark ALLY Robert", tokens=5, items=(1, 3), dropped=(2,), budget=5
    )
    page = tmp_path / "why.html"
    page.write_text(to_html(res, ctx), encoding="utf-8")
    shot = tmp_path / "why.png"
    run_browser(exe, "--window-size=1200,900", f"--screenshot={shot}", page.as_uri(), cwd=tmp_path)
    keep = os.environ.get("GRAPHRECALL_SCREENSHOT")
    if keep:  # to look at it
        shutil.copyfile(shot, keep)
    width, height, rows = read_png(shot.read_bytes())
    assert (width, height) == (1200, 900)
    bpp = len(rows[0]) // width
    pixels = [r[i : i + 3] for r in rows[::3] for i in range(0, len(r), bpp * 3)]
    background = max(set(pixels), key=pixels.count)
    inked = sum(p != background for p in pixels) / len(pixels)
    assert inked > 0.05, f"the page looks blank: {inked:.1%} of sampled pixels differ"
    assert len(set(pixels)) > 50, "too few colours for text, boxes and the graph"
    # The green of an in-context item and the blue of an anchor reached the screen.
    assert any(p[1] > p[0] + 60 and p[1] > p[2] + 40 for p in pixels), "no green"
    assert any(p[2] > p[0] + 20 and p[2] > p[1] for p in pixels), "no blue"
    dom = run_browser(exe, "--dump-dom", page.as_uri(), cwd=tmp_path).stdout
    assert "<svg" in dom and "Why these results" in dom
    assert "<script" not in dom.lower() and "&lt;script&gt;alert" in dom
