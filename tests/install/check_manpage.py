#!/usr/bin/env python3
"""The built jitwarm(1) page documents every command and option the binary
has.

Usage: check_manpage.py JITWARM MAN_PAGE [GROFF]

Reads the command list from `jitwarm --help` and each command's options
from `jitwarm COMMAND --help` (independently of tools/make_manpage.py),
renders the page to text (with groff when given; its warnings fail the
test), and checks that the page has a section per command naming each of
that command's options, and the exit codes.
"""

import re
import subprocess
import sys


def fail(message):
    print(f"FAIL {message}")
    sys.exit(1)


def help_text(jitwarm, *args):
    result = subprocess.run([jitwarm, *args], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        fail(f"jitwarm {' '.join(args)} exited with {result.returncode}")
    return result.stdout


def commands_of(top_help):
    """The names in the 'commands:' block of `jitwarm --help`."""
    block = top_help.split("commands:\n", 1)
    if len(block) != 2:
        fail("jitwarm --help has no 'commands:' block")
    names = []
    for line in block[1].splitlines():
        if not line.strip():
            break
        names.append(line.split()[0])
    return names


def rendered(page_path, groff):
    if groff:
        # No hyphenation and a wide line, so every option stays one word.
        result = subprocess.run(
            [groff, "-man", "-Tutf8", "-ww", "-rHY=0", "-rLL=300n", "-P-cbou",
             page_path], capture_output=True, text=True, check=False)
        if result.returncode != 0 or result.stderr.strip():
            fail(f"groff reports problems in {page_path}:\n{result.stderr}")
        return result.stdout
    # Without groff: the roff source with its escapes undone.
    with open(page_path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"\\f[BIRP]", "", text)
    return text.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")


def sections_by_command(text, commands):
    """{command: its section's text}: a section starts at a line that is
    'jitwarm COMMAND' alone (the subsection heading)."""
    heading = re.compile(r"^\s*(?:\.SS\s+\"?)?jitwarm (\S+?)\"?\s*$")
    sections, current = {}, None
    for line in text.splitlines():
        match = heading.match(line)
        if match and match.group(1) in commands:
            current = match.group(1)
            sections[current] = []
        elif current is not None:
            if re.match(r"^(EXIT STATUS|\.SH)", line.strip()):
                current = None
            else:
                sections[current].append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    jitwarm, page = sys.argv[1], sys.argv[2]
    groff = sys.argv[3] if len(sys.argv) == 4 else None
    top = help_text(jitwarm, "--help")
    commands = commands_of(top)
    if len(commands) < 2:
        fail(f"jitwarm --help lists too few commands to check: {commands}")
    text = rendered(page, groff)
    sections = sections_by_command(text, commands)
    problems = []
    for command in commands:
        if command not in sections:
            problems.append(f"no section for 'jitwarm {command}'")
            continue
        options = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*",
                                        help_text(jitwarm, command, "--help"))))
        missing = [o for o in options
                   if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])",
                                    sections[command])]
        if missing:
            problems.append(f"'jitwarm {command}' section lacks {missing}")
        else:
            print(f"ok   jitwarm {command}: {len(options)} options")
    codes = re.search(r"exit codes: (.*)", top)
    if not codes:
        fail("jitwarm --help states no exit codes")
    exit_section = text.split("EXIT STATUS", 1)
    for code in re.findall(r"(?:^|, )(\d+) ", codes.group(1)):
        if len(exit_section) != 2 or not re.search(rf"^\s*{code}\b",
                                                    exit_section[1], re.M):
            problems.append(f"exit code {code} is not under EXIT STATUS")
    for problem in problems:
        print(f"FAIL {problem}")
    if problems:
        return 1
    print(f"ok   {len(commands)} commands, exit codes"
          + ("" if groff else " (groff not found: the roff is not linted)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
