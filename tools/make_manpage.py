#!/usr/bin/env python3
"""Writes the jitwarm(1) man page from the tool's own help texts.

Usage: make_manpage.py JITWARM OUTPUT --version V --summary TEXT --docdir DIR

The page is built from `jitwarm --help` (the command list and the exit
codes) and `jitwarm COMMAND --help` for every command it lists, so it says
exactly what the binary says and cannot drift from it. Nothing here knows
a command or an option by name.

The help texts follow one layout (tools/cli.cpp, Boost.Program_options):
blocks separated by blank lines; a block that starts with "usage: " is a
synopsis; a block whose first line is a heading ("options:", "commands:",
"arguments:") is a list of two-space-indented terms, each followed by two or
more spaces and its description, which may wrap onto deeper-indented lines
(or start on the next line when the term is long); any other block is a
paragraph. A help text that does not fit this layout is an error, so a
change of layout fails the build instead of producing a garbled page.
"""

import argparse
import re
import subprocess
import sys

TERM_LINE = re.compile(r"^  (\S(?:.*?\S)?)(?:\s{2,}(\S.*))?$")
HEADING = re.compile(r"^([a-z][a-z ]*):$")
EXIT_CODES = re.compile(r"^exit codes: (.*)$", re.IGNORECASE | re.DOTALL)


class HelpLayoutError(Exception):
    pass


def run_help(jitwarm, args):
    result = subprocess.run([jitwarm, *args], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise HelpLayoutError(
            f"'jitwarm {' '.join(args)}' exited with {result.returncode}: "
            f"{result.stderr.strip()}")
    return result.stdout


def blocks_of(text):
    blocks, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line.rstrip())
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def description_column(lines):
    """The column descriptions start at in a list block: Boost aligns them
    all, so it is the most common start among terms followed by a gap."""
    starts = {}
    for line in lines:
        match = TERM_LINE.match(line)
        if match and match.group(2):
            start = match.start(2)
            starts[start] = starts.get(start, 0) + 1
    return max(starts, key=lambda start: (starts[start], -start)) if starts else None


def parse_list(lines, where):
    """[(term, description)] of a heading's block (its lines after the
    heading). A term as wide as the term column is followed by one space
    only, so terms and descriptions are split at the column, not at a
    gap."""
    column = description_column(lines)
    entries = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if indent == 2:
            if column is not None and len(line) > column and \
                    line[column - 1] == " " and line[column] != " ":
                term, description = line[:column].strip(), line[column:].strip()
            else:
                term, description = line.strip(), ""  # description below
            entries.append([term, description])
        elif indent > 2 and entries:
            # A wrapped description line.
            entries[-1][1] = (entries[-1][1] + " " + line.strip()).strip()
        else:
            raise HelpLayoutError(f"{where}: cannot read list line {line!r}")
    for term, description in entries:
        if not description:
            raise HelpLayoutError(f"{where}: '{term}' has no description")
    return [(term, description) for term, description in entries]


def parse_help(text, where):
    """{'usage': str, 'paragraphs': [str], 'lists': [(heading, entries)]}"""
    parsed = {"usage": None, "paragraphs": [], "lists": []}
    for block in blocks_of(text):
        first = block[0]
        heading = HEADING.match(first)
        if first.startswith("usage: "):
            if parsed["usage"] is not None:
                raise HelpLayoutError(f"{where}: two usage lines")
            parsed["usage"] = " ".join(line.strip() for line in block)[7:]
        elif heading:
            parsed["lists"].append((heading.group(1),
                                    parse_list(block[1:], where)))
        else:
            parsed["paragraphs"].append(" ".join(line.strip()
                                                 for line in block))
    if parsed["usage"] is None:
        raise HelpLayoutError(f"{where}: no 'usage:' line")
    return parsed


# --- roff ------------------------------------------------------------------

def roff_text(text):
    """Text for a roff line: backslashes escaped, a leading control
    character neutralised."""
    text = text.replace("\\", "\\e")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def roff_option(term):
    """An option term such as "-m [ --manifest ] arg": dashes as minus
    signs (so they copy and search as '-'), option names bold, the rest as
    is."""
    # Boost writes "-m [ --manifest ] arg"; a page says "-m, --manifest arg".
    term = re.sub(r"^(-\w) \[ (--[\w-]+) \]", r"\1, \2", term)
    out = []
    for word in term.split(" "):
        escaped = roff_text(word).replace("-", "\\-")
        if word.startswith("-"):
            comma = escaped.endswith(",")
            escaped = f"\\fB{escaped.rstrip(',')}\\fR" + ("," if comma else "")
        out.append(escaped)
    return " ".join(out)


def roff_synopsis(usage):
    return ".nf\n" + roff_text(usage).replace("-", "\\-") + "\n.fi"


def render_list(entries, term_style):
    lines = []
    for term, description in entries:
        lines += [".TP", term_style(term), roff_text(description)]
    return lines


def command_section(name, parsed):
    lines = [f'.SS "jitwarm {name}"', roff_synopsis(parsed["usage"])]
    for paragraph in parsed["paragraphs"]:
        lines += [".PP", roff_text(paragraph)]
    for heading, entries in parsed["lists"]:
        lines += [".PP", roff_text(heading.capitalize() + ":")]
        lines += render_list(entries, roff_option)
    return lines


def build_page(jitwarm, version, summary, docdir):
    top = parse_help(run_help(jitwarm, ["--help"]), "jitwarm --help")
    commands = dict(top["lists"]).get("commands")
    if not commands:
        raise HelpLayoutError("jitwarm --help: no 'commands:' list")
    exit_codes = None
    description = []
    for paragraph in top["paragraphs"]:
        match = EXIT_CODES.match(paragraph)
        if match:
            exit_codes = match.group(1)
        else:
            description.append(paragraph)
    if exit_codes is None:
        raise HelpLayoutError("jitwarm --help: no 'exit codes:' line")

    # "COMMAND [options]    (jitwarm help COMMAND, ...)": the synopsis, then
    # the hint in parentheses as the first paragraph of the description.
    usage, _, hint = top["usage"].partition("(")
    lines = [
        f'.TH JITWARM 1 "" "jitwarm {roff_text(version)}" "User Commands"',
        ".SH NAME",
        f"jitwarm \\- {roff_text(summary)}",
        ".SH SYNOPSIS",
        roff_synopsis(usage.strip()),
        ".br",
        roff_synopsis("jitwarm --version"),
        ".SH DESCRIPTION",
    ]
    lines.append(roff_text(summary[0].upper() + summary[1:] + "."))
    if hint:
        lines += [".PP", roff_text(hint.rstrip(")").strip() + ".")]
    for paragraph in description:
        lines += [".PP", roff_text(paragraph)]
    lines.append(".SH COMMANDS")
    lines += render_list(commands, lambda term: f"\\fB{roff_text(term)}\\fR")
    for name, _ in commands:
        text = run_help(jitwarm, [name, "--help"])
        lines += command_section(name, parse_help(text, f"jitwarm {name} --help"))
    lines.append(".SH EXIT STATUS")
    # "0 ok, 1 failures found, 4 environment (no device, I/O), ...": a new
    # item starts at a comma followed by a number.
    for item in re.split(r",\s+(?=\d)", exit_codes):
        code, _, meaning = item.partition(" ")
        if not code.isdigit():
            raise HelpLayoutError(f"jitwarm --help: cannot read exit code {item!r}")
        lines += [".TP", code, roff_text(meaning)]
    lines += [
        ".SH SEE ALSO",
        f"The guides in \\fI{roff_text(docdir)}\\fR: cli.md (every command in "
        "detail), warmup.md, conformance.md, plugin-abi.md and plugin-sdk.md.",
    ]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jitwarm")
    parser.add_argument("output")
    parser.add_argument("--version", required=True)
    parser.add_argument("--summary", required=True)
    parser.add_argument("--docdir", required=True)
    args = parser.parse_args()
    try:
        page = build_page(args.jitwarm, args.version, args.summary, args.docdir)
    except HelpLayoutError as e:
        print(f"make_manpage.py: {e}", file=sys.stderr)
        return 1
    with open(args.output, "w", encoding="utf-8") as out:
        out.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
