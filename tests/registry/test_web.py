"""The web page: over HTTP as HTML, and in headless Chromium as a person sees it."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import Live
from .helpers import publish

MOD = "example.com/acme/xor"
SECRET = "example.com/acme/hidden"
XSS_FILE = "extra/&lt;img src=x onerror=alert(1)&gt;';alert(2);'.bin"
XSS_SPEC = "<img src=x onerror=alert(3)>Sort tickets"

MANIFEST = {
    "format": "weightlang.artifact",
    "format_version": 1,
    "model": "xor",
    "interface": {
        "input": {"name": "x", "dtype": "f32", "shape": [2]},
        "output": {"name": "y", "dtype": "f32", "shape": [1]},
    },
    "layers": [
        {"name": "h1", "op": "linear", "args": {"in": 2, "out": 8}},
        {"name": "out", "op": "linear", "args": {"in": 8, "out": 1}},
    ],
    "imports": [
        {
            "layer": "h1",
            "source": "github.com/acme/xor-base/xor",
            "package": {"module": "github.com/acme/xor-base", "version": "v0.1.0"},
            "frozen": True,
        }
    ],
    "weights": {
        "file": "weights.safetensors",
        "tensors": {
            "h1.weight": {"shape": [8, 2], "origin": "imported", "upstream_origin": "trained"},
            "out.weight": {"shape": [1, 8], "origin": "trained"},
        },
    },
}


def paw_bundle() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("meta.json", json.dumps({"program_id": "pid-42abc", "spec": XSS_SPEC}))
        z.writestr("prompt_template.txt", "{INPUT_PLACEHOLDER}")
    return buf.getvalue()


def release() -> dict[str, bytes]:
    return {
        "wgt.mod": f"module {MOD}\nwgt 0.1\n\nrequire github.com/acme/xor-base v0.1.0\n".encode(),
        "xor/manifest.json": json.dumps(MANIFEST).encode(),
        "xor/weights.safetensors": b"\x00" * 512,
        "triage.paw": paw_bundle(),
        XSS_FILE: b"boo",
    }


ARTIFACTS = {
    "xor/manifest.json": ("xor", "wgt"),
    "xor/weights.safetensors": ("xor", "wgt"),
    "triage.paw": ("triage", "paw"),
}


@pytest.fixture
def site(live: Live) -> Iterator[Live]:
    with httpx.Client(base_url=live.url) as http:
        r = publish(http, live.token, MOD, "v0.1.0", release(), artifacts=ARTIFACTS)
        assert r.status_code == 201, r.text
        hidden = {"wgt.mod": f"module {SECRET}\n".encode()}
        r = publish(http, live.token, SECRET, "v1.0.0", hidden, private=True)
        assert r.status_code == 201, r.text
    yield live


def test_pages_over_http(site: Live) -> None:
    sha = hashlib.sha256(release()["xor/weights.safetensors"]).hexdigest()
    with httpx.Client(base_url=site.url) as http:
        home = http.get("/")
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert MOD in home.text and "v0.1.0" in home.text and SECRET not in home.text
        assert 'Log size: <b id="log-size">1</b>' in home.text  # the private one is not logged
        assert "sum.test" in home.text  # the signed head's origin line
        auth = {"Authorization": f"Bearer {site.token}"}
        assert SECRET in http.get("/", headers=auth).text
        assert http.get(f"/-/module/{SECRET}").status_code == 404
        assert http.get(f"/-/module/{SECRET}", headers=auth).status_code == 200
        assert http.get(f"/-/module/{SECRET}/@v/v1.0.0").status_code == 404
        assert http.get("/-/module/example.com/acme/nope").status_code == 404
        assert http.get("/-/module/Bad..path").status_code == 410

        mod = http.get(f"/-/module/{MOD}")
        assert 'href="/-/module/example.com/acme/xor/@v/v0.1.0"' in mod.text
        page = http.get(f"/-/module/{MOD}/@v/v0.1.0")
        assert page.status_code == 200, page.text
        text = page.text
        assert f"wgtpm get {MOD}@v0.1.0" in text and sha in text
        assert "x: f32[2]" in text and "y: f32[1]" in text
        assert "github.com/acme/xor-base@v0.1.0" in text and "imported" in text
        assert "pid-42abc" in text
        # pictures drawn on the server: the requirements and the layers with their provenance
        assert '<svg class="graph"' in text and "requires nothing" not in text
        assert 'href="/-/module/github.com/acme/xor-base/@v/v0.1.0"' in text
        assert '<svg class="layers"' in text
        assert "h1 = linear" in text and ">from github.com/acme/xor-base<" in text
        assert ">@v0.1.0, frozen<" in text and ">trained<" in text
        # attacker-controlled strings are text, never markup
        assert "<img" not in text and "&amp;lt;img src=x" in text
        assert "&lt;img src=x onerror=alert(3)&gt;Sort tickets" in text
        assert "&#x27;;alert(2);&#x27;" in text
        assert "script-src" in page.headers["content-security-policy"]
        # a protocol URL is still the protocol
        assert http.get(f"/{MOD}/@v/list").text == "v0.1.0\n"


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not (os.access(browser, os.X_OK) and os.access(driver, os.X_OK)):
        if os.environ.get("WGTPM_REQUIRE_CHROMIUM"):
            pytest.fail("WGTPM_REQUIRE_CHROMIUM is set, but chromium or chromedriver is missing")
        pytest.skip("headless page test needs Debian's chromium and chromium-driver")
    pytest.importorskip("selenium", reason="the page test drives Chromium with selenium")
    return browser, driver


def test_pages_in_headless_chromium(site: Live, tmp_path: Path) -> None:
    browser, driver_path = _chromium()
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,1600",
    ):
        opts.add_argument(arg)
    try:
        drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    except Exception as exc:  # a browser that cannot start here is an environment problem
        if os.environ.get("WGTPM_REQUIRE_CHROMIUM"):
            raise
        pytest.skip(f"Chromium did not start: {str(exc).splitlines()[0]}")
    try:
        drv.set_page_load_timeout(30)
        drv.get(site.url + "/")
        body = drv.find_element(By.TAG_NAME, "body").text
        assert MOD in body and "Checksum database" in body and SECRET not in body
        drv.find_element(By.LINK_TEXT, MOD).click()
        assert "v0.1.0" in drv.find_element(By.TAG_NAME, "h1").text + drv.page_source
        drv.find_element(By.LINK_TEXT, "v0.1.0").click()

        assert drv.find_element(By.ID, "version").text == "v0.1.0"
        assert drv.find_element(By.ID, "get-line").get_attribute("value") == (
            f"wgtpm get {MOD}@v0.1.0"
        )
        body = drv.find_element(By.TAG_NAME, "body").text
        sha = hashlib.sha256(release()["xor/weights.safetensors"]).hexdigest()
        assert sha in body
        assert drv.find_element(By.CLASS_NAME, "iface-in").text == "x: f32[2]"
        assert drv.find_element(By.CLASS_NAME, "iface-out").text == "y: f32[1]"
        assert drv.find_element(By.CLASS_NAME, "program-id").text == "pid-42abc"
        # the XSS attempts show as the text they are: no element made, no script run
        names = [e.text for e in drv.find_elements(By.CSS_SELECTOR, ".file")]
        assert XSS_FILE in names
        assert drv.find_element(By.CLASS_NAME, "spec").text == XSS_SPEC
        assert drv.find_elements(By.TAG_NAME, "img") == []
        with pytest.raises(NoAlertPresentException):
            drv.switch_to.alert.text  # noqa: B018 - raises when no alert is open
        shot = tmp_path / "version-page.png"
        assert drv.save_screenshot(str(shot)) and shot.stat().st_size > 1000
    finally:
        drv.quit()


def test_chromium_is_where_ci_installs_it() -> None:
    """CI installs Debian's chromium; say plainly when this machine lacks it."""
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("/usr/bin/chromium is absent: apt-get install chromium chromium-driver")
    out = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True)
    assert "Chromium" in out.stdout, out.stderr
