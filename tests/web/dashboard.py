#!/usr/bin/env python3
"""Drives covo's web dashboard in headless Chromium (selenium + Debian's chromium-driver).

Run by gateway/tests/integration/web.rs against a real `covo run` on the sim board with the
scripted model. Each step fails loudly with what it waited for; screenshots go to --shots.
The last line printed is a JSON report.
"""
import argparse
import json
import shutil
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait


def browser(width=1280, height=1000, extra=()):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        sys.exit("chromium and chromedriver are missing: apt-get install chromium chromium-driver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              f"--window-size={width},{height}", "--hide-scrollbars", "--force-device-scale-factor=1", *extra):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def wait(d, what, cond, timeout=15):
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.05,
                             ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)).until(cond)
    except Exception as e:
        sys.exit(f"timed out waiting for {what}: {type(e).__name__}\npage text:\n{d.find_element(By.TAG_NAME, 'body').text[:3000]}")


def text_of(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return [e.text for e in els]


def full_shot(d, path, width):
    d.set_window_size(width, 1000)
    time.sleep(0.2)
    h, chrome = d.execute_script(
        "return [Math.ceil(document.documentElement.scrollHeight), window.outerHeight - window.innerHeight]")
    d.set_window_size(width, max(600, min(h + chrome, 4000)))
    time.sleep(0.3)
    d.save_screenshot(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--shots", required=True)
    a = ap.parse_args()
    report = {}
    d = browser()
    try:
        # Without the token: the login form, and the API refuses the browser too.
        d.get(a.url + "/")
        wait(d, "the login form", EC.presence_of_element_located((By.ID, "login")))
        assert not d.find_elements(By.ID, "chat-form"), "the dashboard showed without the token"
        status = d.execute_script("return fetch('/api/board').then(r => r.status)")
        assert status == 401, f"/api/board without the token answered {status}"
        d.save_screenshot(f"{a.shots}/login.png")

        # A wrong token is refused; the right one opens the dashboard.
        # The refusal comes after the server's wrong-token delay, so the old form stays on the
        # screen for a while after the click: wait for it to go before using the new one.
        old_form = d.find_element(By.ID, "login")
        d.find_element(By.ID, "token").send_keys("wrong")
        d.find_element(By.ID, "login-button").click()
        wait(d, "the refused login to replace the page", EC.staleness_of(old_form), timeout=30)
        wait(d, "the login form again", EC.presence_of_element_located((By.ID, "login")))
        assert not d.find_elements(By.ID, "chat-form"), "a wrong token opened the dashboard"
        d.find_element(By.ID, "token").send_keys(a.token)
        d.find_element(By.ID, "login-button").click()
        wait(d, "the live stream", EC.text_to_be_present_in_element((By.ID, "live"), "live"))
        cookies = {c["name"]: c for c in d.get_cookies()}
        assert cookies["covo_token"]["httpOnly"], cookies
        assert cookies["covo_token"].get("sameSite") == "Strict", cookies
        assert d.execute_script("return document.cookie") == "", "the token cookie is readable by scripts"

        # The temperature, live, and its history chart.
        wait(d, "a temperature value", lambda d: any(
            t not in ("", "–") for t in text_of(d, "#q-climate-temperature .v")))
        temp = float(text_of(d, "#q-climate-temperature .v")[0])
        assert 10 < temp < 40, temp
        report["temperature"] = temp
        wait(d, "the temperature chart", lambda d: len(d.find_element(
            By.CSS_SELECTOR, "#q-climate-temperature polyline").get_attribute("points").split()) > 50)
        report["chart_points"] = len(d.find_element(
            By.CSS_SELECTOR, "#q-climate-temperature polyline").get_attribute("points").split())
        # A sample pushed after the page loaded.
        n = d.execute_script("return window.covoSamples.length")
        wait(d, "a live sample", lambda d: d.execute_script("return window.covoSamples.length") > n)

        # Chat: the scripted answer streams in.
        box = d.find_element(By.ID, "chat-input")
        box.send_keys("hello")
        d.find_element(By.ID, "chat-send").click()
        wait(d, "the scripted answer", lambda d: any(
            "Hello from the scripted model" in t for t in text_of(d, ".msg.bot")))

        # Opened again, the page shows the conversation so far.
        d.refresh()
        wait(d, "the conversation after a reload", lambda d: any(
            "Hello from the scripted model" in t for t in text_of(d, ".msg.bot")) and "hello" in text_of(d, ".msg.user"))
        wait(d, "the live stream after the reload", EC.text_to_be_present_in_element((By.ID, "live"), "live"))

        # The relay: the switch flips once the board reads the line back high.
        sw = wait(d, "the relay switch", EC.element_to_be_clickable((By.ID, "switch-relay")))
        assert sw.get_attribute("aria-checked") == "false"
        sw.click()
        wait(d, "the relay reading back on", lambda d: d.find_element(
            By.ID, "switch-relay").get_attribute("aria-checked") == "true")
        assert d.find_element(By.ID, "state-relay").text == "on"

        # A destructive call waits for Approve on the page.
        box = d.find_element(By.ID, "chat-input")
        box.send_keys("please delete old-notes.txt")
        d.find_element(By.ID, "chat-send").click()
        wait(d, "the pending approval", EC.presence_of_element_located((By.CSS_SELECTOR, "#approvals .appr")))
        assert "fs_delete" in d.find_element(By.CSS_SELECTOR, "#approvals .appr").text
        assert d.find_element(By.ID, "approvals-count").text == "1"
        d.save_screenshot(f"{a.shots}/approval.png")
        d.find_element(By.CSS_SELECTOR, "#approvals .appr button.approve").click()
        wait(d, "the answer after approval", lambda d: any(
            "Deleted old-notes.txt." in t for t in text_of(d, ".msg.bot")))
        wait(d, "the approval to leave", lambda d: not d.find_elements(By.CSS_SELECTOR, "#approvals .appr"))
        wait(d, "fs_delete in the tool-call log", lambda d: any(
            "fs_delete" in t for t in text_of(d, "#log tbody tr")))
        d.execute_script("window.scrollTo(0, 0)")
        full_shot(d, f"{a.shots}/dashboard.png", 1280)

        # A phone: one column, nothing wider than the screen.
        d.set_window_size(390, 844)
        time.sleep(0.3)
        over = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert over <= 1, f"the page is {over}px wider than a phone screen"
        d.save_screenshot(f"{a.shots}/phone.png")
        report["phone_overflow_px"] = over
    finally:
        d.quit()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
