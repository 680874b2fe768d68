#!/usr/bin/env python3
"""The user documentation agrees with the code it describes.

Usage: check_docs.py SOURCE_ROOT. Checks, over README.md and docs/*.md (not
docs/results/, which records past runs):
- every repository file a page names exists (no page points at a file that is
  not in the repository);
- every environment variable the code reads (core, plugins, tools) is in the
  environment table of docs/cli.md;
- every implementation a compile-key example names ("... via NAME") is one the
  code registers;
- the README says what jitwarm is before how to install it, and what happens
  without a CUDA toolkit;
- no code block is empty;
- no file of the repository (code, tests, manifests, docs) cites a Markdown
  file the repository does not hold: the design lives in docs/, and a page
  kept elsewhere is no reference a reader can follow.
Prints one line per problem; exits 1 when there is one."""
import glob
import os
import re
import subprocess
import sys

ROOT = sys.argv[1]
os.chdir(ROOT)
PAGES = ["README.md"] + sorted(glob.glob("docs/*.md"))
SOURCES = [p for d in ("core", "plugins", "tools") for p in
           glob.glob(f"{d}/**/*", recursive=True)
           if p.endswith((".c", ".h", ".cpp", ".hpp", ".cuh"))]
# Variables every program may read, not jitwarm settings.
SYSTEM_VARIABLES = {"PATH", "HOME", "TMPDIR"}
problems = []


def text_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# 1. Files named in `backticks` exist: relative to the root or to the page.
PATH_IN_TICKS = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.*-]+)+\.(?:md|cpp|hpp|h|c|toml|py|sh|cuh|txt|json))`")
for page in PAGES:
    for path in set(PATH_IN_TICKS.findall(text_of(page))):
        candidates = [path, os.path.join(os.path.dirname(page), path)]
        if not any(glob.glob(c) for c in candidates):
            problems.append(f"{page}: names `{path}`, which is not in the repository")

# 2. Environment variables read by the code are documented.
READS = [re.compile(r'getenv\("([A-Z][A-Z0-9_]*)"\)'),
         re.compile(r'"(JITWARM_[A-Z0-9_]+)"'),
         re.compile(r'env_or_empty\("([A-Z][A-Z0-9_]*)"\)')]
variables = set()
for source in SOURCES:
    text = text_of(source)
    for pattern in READS:
        variables.update(pattern.findall(text))
cli_page = text_of("docs/cli.md")
environment = cli_page[cli_page.index("## Environment"):]
for variable in sorted(variables - SYSTEM_VARIABLES):
    if f"`{variable}`" not in environment:
        problems.append(f"docs/cli.md: the environment table lacks `{variable}`, which the "
                        "code reads")

# 3. Implementation names in key examples are real.
IMPL_NAME = re.compile(r'(?:impl_name|kImplName)\s*=\s*"([^"]+)"')
implementations = set()
for source in SOURCES + glob.glob("examples/**/*.c*", recursive=True):
    implementations.update(IMPL_NAME.findall(text_of(source)))
for page in PAGES:
    for name in set(re.findall(r"\) via ([A-Za-z0-9_-]+)", text_of(page))):
        if name not in implementations:
            problems.append(f"{page}: a key names the implementation '{name}'; the code "
                            f"registers {sorted(implementations)}")

# 4. The README's first screen: what it is, then the two commands.
readme = text_of("README.md")
install = readme.find("scripts/run.sh main")
if not 0 <= readme.find("jitwarm is a") < install:
    problems.append("README.md: the install commands come before what jitwarm is")
if "Without a CUDA toolkit" not in readme or "-Dcuda=" not in readme:
    problems.append("README.md: does not say what happens without a CUDA toolkit")

# 5. No code block is empty: an example that says nothing is a lost one.
EMPTY_FENCE = re.compile(r"^```[\w-]*\n\s*```$", re.M)
for page in PAGES:
    text = text_of(page)
    for match in EMPTY_FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        problems.append(f"{page}:{line}: an empty code block")


# 6. Every Markdown file a file of the repository cites is in the repository:
#    relative to the root, to docs/ or to the citing file. URLs are left out.
def repository_files():
    """The tracked files; outside a git checkout, every file but build trees."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], capture_output=True,
                                check=True).stdout.decode("utf-8")
        return [p for p in listed.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for directory, subdirs, names in os.walk("."):
            subdirs[:] = [d for d in subdirs if not d.startswith(".") and
                          not os.path.isdir(os.path.join(directory, d, "meson-private"))]
            found += [os.path.normpath(os.path.join(directory, n)) for n in names]
        return found


URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
MARKDOWN_NAME = re.compile(r"(?<![\w./:-])((?:\.\.?/)*[\w.-]*(?:/[\w.-]+)*[\w-]\.md)(?!\w)")
FILES = repository_files()
HELD = set(FILES)
citations = 0
for path in FILES:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        continue  # binary (fuzz corpora) or absent from the work tree
    for number, line in enumerate(text.splitlines(), 1):
        for name in MARKDOWN_NAME.findall(URL.sub("", line)):
            citations += 1
            places = [os.path.normpath(os.path.join(base, name))
                      for base in ("", "docs", os.path.dirname(path))]
            if not any(p in HELD for p in places):
                problems.append(f"{path}:{number}: cites {name}, which is not in the "
                                "repository (cite a page of docs/)")

for problem in problems:
    print("FAIL " + problem)
print(f"{len(PAGES)} pages, {len(variables)} variables, {len(implementations)} "
      f"implementations, {citations} Markdown citations in {len(FILES)} files "
      f"checked: {len(problems)} problems")
sys.exit(1 if problems else 0)
