#!/usr/bin/env python3
"""Reports C++ files over a line limit and functions over a line limit (issue 30).

    hack/long-functions.py [--max-file-lines 800] [--max-function-lines 60] [PATH ...]

PATH is a file or a folder (default: src/ of the repository); folders are searched for *.cc and
*.h. A function counts from the first line of its signature (template line included) to its
closing brace; lambdas and local classes count as part of the function around them. Prints one
line per finding, longest first within each kind, and exits 1 when there is any (0 otherwise),
so it can serve as a check.

The parser is deliberately small: comments, string and character literals and preprocessor
lines are blanked, then braces are matched. A brace opens a function body when it follows a
parenthesised parameter list at namespace or class scope (not an initializer: no '=' before the
first '(' unless it is an operator). It knows nothing of macros that expand to braces.
"""

import argparse
import os
import re
import sys


def blank(text):
    """Returns text with comments, literals and preprocessor lines replaced by spaces (newlines
    kept, so offsets and line numbers are unchanged)."""
    out = []
    i = 0
    n = len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == '#':
            # A preprocessor line, with its continuations.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                out.append(' ')
                i += 1
            continue
        if c == '\n':
            out.append(c)
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                out.append(' ')
                i += 1
            continue
        if text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            close = ')' + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
            continue
        if c in '"\'':
            # A digit separator (1'000) is no character literal.
            if c == '\'' and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(' ')
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + ' ' * (j - i - 2) + c if j - i >= 2 else ' ' * (j - i))
            i = j
            continue
        out.append(c)
        i += 1
    return ''.join(out)


CONTAINER = re.compile(r'^(?:template\s*<.*>\s*)?(?:(?:inline\s+)?namespace\b|extern\s*$|(?:class|struct|union)\b)', re.S)
ACCESS = re.compile(r'^(?:(?:public|private|protected)\s*:\s*)+')
NAME = re.compile(r'(~?[A-Za-z_][\w:]*(?:<[^()]*>)?|operator\s*[^\s(]+(?:\s*\(\s*\))?)\s*$')


def classify(head):
    """'container', 'function' or 'other' for the code before a '{' at namespace/class scope."""
    if CONTAINER.match(head) and '(' not in head.split('{')[0].split(':')[0]:
        return 'container'
    if re.match(r'^(?:template\s*<.*>\s*)?enum\b', head, re.S):
        return 'other'
    paren = head.find('(')
    if paren < 0:
        return 'other'
    if 'operator' in head[:paren + 1] or '=' not in head[:paren]:
        return 'function'
    return 'other'


def function_name(head):
    paren = head.find('(')
    if 'operator' in head:
        m = re.search(r'([\w:~]*operator\s*(?:\(\s*\)|[^\s(]+))\s*\(', head)
        if m:
            return re.sub(r'\s+', '', m.group(1))
    m = NAME.search(head[:paren])
    return m.group(1) if m else head[:paren].split()[-1] if head[:paren].split() else '?'


def bodies(code, line_of):
    """Yields (name, first line, last line) of each function body in blanked code. Only
    namespace and class bodies are entered; any other brace is skipped to its match."""
    head_start = 0
    pos = 0
    while pos < len(code):
        ch = code[pos]
        if ch in ';}':
            head_start = pos + 1
        elif ch == '{':
            raw = code[head_start:pos]
            head = ' '.join(ACCESS.sub('', raw.lstrip()).split())
            kind = classify(head) if head else 'other'
            if kind == 'container':
                head_start = pos + 1
            else:
                end = _match(code, pos)
                if kind == 'function':
                    first = head_start + len(raw) - len(raw.lstrip())
                    lead = ACCESS.match(raw.lstrip())
                    if lead:
                        first += lead.end()
                        while first < pos and code[first].isspace():
                            first += 1
                    yield function_name(head), line_of[first], line_of[end - 1]
                    head_start = end
                pos = end
                continue
        pos += 1


def _match(code, pos):
    """Offset just after the brace matching the one at pos."""
    depth = 0
    for j in range(pos, len(code)):
        if code[j] == '{':
            depth += 1
        elif code[j] == '}':
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


def scan(text):
    """(name, first line, lines) of every function body in text."""
    code = blank(text)
    line_of = []
    line = 1
    for ch in code:
        line_of.append(line)
        if ch == '\n':
            line += 1
    line_of.append(line)
    for name, first, last in bodies(code, line_of):
        yield name, first, last - first + 1


def sources(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(('.cc', '.h', '.cpp', '.hpp')):
                    yield os.path.join(root, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--max-file-lines', type=int, default=800)
    parser.add_argument('--max-function-lines', type=int, default=60)
    parser.add_argument('paths', nargs='*')
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = args.paths or [os.path.join(root, 'src')]
    long_files = []
    long_functions = []
    for path in sources(paths):
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        shown = os.path.relpath(path, root) if os.path.abspath(path).startswith(root + os.sep) else path
        lines = text.count('\n') + (0 if text.endswith('\n') or not text else 1)
        if lines > args.max_file_lines:
            long_files.append((lines, shown))
        for name, first, count in scan(text):
            if count > args.max_function_lines:
                long_functions.append((count, shown, first, name))
    for lines, shown in sorted(long_files, key=lambda x: (-x[0], x[1])):
        print(f'{shown}: {lines} lines (limit {args.max_file_lines})')
    for count, shown, first, name in sorted(long_functions, key=lambda x: (-x[0], x[1], x[2])):
        print(f'{shown}:{first}: {name}: {count} lines (limit {args.max_function_lines})')
    return 1 if long_files or long_functions else 0


if __name__ == '__main__':
    sys.exit(main())
