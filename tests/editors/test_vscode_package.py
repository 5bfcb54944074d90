"""What `npx @vscode/vsce package` in editors/vscode needs of the extension (#23: it
failed on all three): a `repository` in package.json, no relative link in the README
(vsce rewrites them against the repository and refuses those it cannot), and a
LICENSE file of the license package.json and pyproject.toml declare.  vsce itself
is not installed offline, so these are its checks, read statically."""
from __future__ import annotations

import json
import re

from editor_support import EDITORS, REPO

VSCODE = EDITORS / "vscode"
MANIFEST = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
#: Markdown links and images, inline `[text](target)` and reference `[label]: target`.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)|^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$", re.MULTILINE)


def test_the_manifest_names_its_repository():
    repository = MANIFEST.get("repository")
    url = repository.get("url") if isinstance(repository, dict) else repository
    assert isinstance(url, str) and re.match(r"(https|git\+https)://\S+$", url), repository


def test_the_readme_has_no_relative_links():
    text = (VSCODE / "README.md").read_text(encoding="utf-8")
    targets = [a or b for a, b in LINK.findall(text)]
    relative = [t for t in targets if not re.match(r"(https?:|mailto:|#)", t)]
    assert relative == [], f"relative links vsce cannot rewrite: {relative}"


def test_a_license_file_of_the_declared_license():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")   # no tomllib on 3.10
    declared = re.search(r'^license = \{ text = "([^"]+)" \}$', pyproject, re.MULTILINE)
    assert MANIFEST["license"] == declared.group(1) == "MIT"
    license_text = (VSCODE / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in license_text
    ignored = (VSCODE / ".vscodeignore").read_text(encoding="utf-8").split()
    assert "LICENSE" not in ignored
