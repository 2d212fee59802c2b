"""The operating system a traceback's file paths show: `/Users/<name>/…` and `/opt/homebrew/` are a Mac's,
`C:\\Users\\…` and `…\\Lib\\site-packages` Windows', `/home/<name>/…`, `/usr/lib/python3…` and Colab's
`/content/` Linux's, `/mnt/c/Users/…` WSL's. Read only when every path that says something names one system (a report that
mixes a Mac with a Linux server says nothing), and trusted least: a stated or printed OS wins.
"""

from __future__ import annotations

import re

from envdoctor.read._util import put

_SYSTEMS = (
    ("macos", re.compile(r"(?<![\w:/\\.-])/Users/[\w.@-]{1,60}/|(?<![\w/.-])/opt/homebrew/|/Library/Frameworks/Python\.framework/"
                         r"|(?<![\w/.-])/private/var/folders/")),  # macOS's per-user temporary directory (pip's build dirs)
    ("windows", re.compile(r"(?<![\w])[A-Za-z]:[\\/]{1,2}(?:Users|Program Files|ProgramData|Python3\d{1,2}|Windows)[\\/]"
                           r"|\\Lib\\site-packages\\", re.I)),
    ("linux", re.compile(r"(?<![\w:/\\.-])/home/[\w.@-]{1,60}/|(?<![\w/.-])/usr/(?:local/)?lib/python3\.\d{1,2}/"
                         r"|(?<![\w/.-])/usr/lib64/|(?<![\w/.-])/content/(?:drive/|sample_data|[\w.-]{1,60}\.py\b)")),
)


# A Windows drive mounted under /mnt/<letter>/ is WSL's (drvfs): a Linux inside Windows.
_WSL = re.compile(r"(?<![\w/.-])/mnt/[a-z]/(?:Users|Program Files|Windows|ProgramData)/")


def parse(text: str) -> dict:
    facts: dict = {}
    if "/" not in text and "\\" not in text:
        return facts
    found = {system for system, pattern in _SYSTEMS if pattern.search(text)}
    wsl = bool(_WSL.search(text))
    if wsl:
        found = (found - {"linux"}) | {"wsl"}
    if found == {"wsl"}:
        put(facts, "host.os", "linux")
        put(facts, "host.wsl", True)
    elif len(found) == 1:
        put(facts, "host.os", found.pop())
    return facts
