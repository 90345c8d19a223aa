#!/usr/bin/env bash
# `npm test`'s first step (pretest): the browser suites drive Debian's Chromium with playwright-core
# (never a downloaded browser), and the editor's end-to-end suite installs code-server into
# .vscode-test/, which builds kerberos (libkrb5-dev, a C++ toolchain, python3) and takes Debian's
# ripgrep instead of downloading one. The phone's core flows also run on WebKit (Debian's
# webkit2gtk-driver, whose MiniBrowser needs an X display: xvfb) and Firefox ESR (firefox-esr, driven over
# WebDriver BiDi by puppeteer-core): no driver or browser is downloaded. Installs what is missing when it can (root with apt-get);
# otherwise stops at once with the one command to run.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
{ command -v g++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1; } || missing+=(build-essential)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v WebKitWebDriver >/dev/null 2>&1 || missing+=(webkit2gtk-driver)
command -v firefox-esr >/dev/null 2>&1 || missing+=(firefox-esr)
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
# Self-signed certificates for the HTTPS servers of the push tests (test/helpers/self-signed.ts).
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0

command="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "npm test needs these system packages first: ${missing[*]}" >&2
  echo "Run: sudo sh -c '$command'" >&2
  exit 1
fi
echo "Installing the test prerequisites: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
