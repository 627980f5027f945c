#!/usr/bin/env python3
"""Fails when code outside src/k8s and src/api reads or builds JSON itself (issue 30 item 1).

    hack/check-json-access.py [ROOT]

ROOT is the repository (default: the one this script is in). Every *.cc and *.h under src/,
except src/k8s/ (and src/k8s_informer/, its informers) and src/api/, is searched, with comments and string literals blanked, for:
  - the JSON accessors of k8s/json.h: json::Find, GetString, GetInt, GetBool, Parse,
    ParseInSitu, Serialize, DeeperThan, FindTooDeep;
  - RapidJSON itself (rapidjson::...) and the members a rapidjson::Value is read or changed
    with (IsObject, GetArray, HasMember, FindMember, AddMember, ...).
What stays allowed everywhere: the types (json::Value, json::Document, json::kMaxDepth: a
decoder's signature), and json::Quote (a string escaped into a message or a non-object body).
Berth's objects go through the codec (src/api/v1alpha1/codec.h, http_api.h), core Kubernetes
objects through src/k8s (objects.h, core_types.h, pod_template.h).

Prints one line per finding, "path:line: what", and exits 1 when there is any (0 otherwise): the
ctest `check.json_access` (label unit) runs it, so it stays true.
"""

import os
import re
import sys

# src/k8s_informer: the informers (k8s/informer.h), part of src/k8s in their own include root.
ALLOWED_DIRS = ("src/k8s/", "src/k8s_informer/", "src/api/")

ACCESSORS = re.compile(
    r"\bjson::(Find|GetString|GetInt|GetBool|Parse|ParseInSitu|Serialize|DeeperThan|FindTooDeep)\s*\(")
RAPIDJSON = re.compile(r"\brapidjson::|#\s*include\s*<rapidjson/")
MEMBERS = re.compile(
    r"(\.|->)\s*(IsObject|IsArray|IsString|IsInt64|IsInt|IsUint64|IsBool|IsNumber|IsDouble|"
    r"GetArray|GetObject|HasMember|FindMember|MemberBegin|MemberEnd|MemberCount|ObjectEmpty|"
    r"GetInt64|GetDouble|GetStringLength|GetBool|RemoveMember|AddMember|PushBack|SetObject|SetArray|"
    r"EraseMember)\s*\(")


def blank(text):
    """Comments and string/character literals replaced by spaces (newlines kept). Preprocessor
    include lines are kept (an include of RapidJSON counts)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator (1'000)
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(root):
    src = os.path.join(root, "src")
    for dirpath, _, files in sorted(os.walk(src)):
        for name in sorted(files):
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel.startswith(ALLOWED_DIRS):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            include_lines = {m.start() for m in re.finditer(r"^\s*#\s*include\s*<rapidjson/", text, re.M)}
            code = blank(text)
            for lineno, line in enumerate(code.split("\n"), 1):
                for pattern, what in ((ACCESSORS, "a JSON accessor"), (RAPIDJSON, "RapidJSON"),
                                      (MEMBERS, "a RapidJSON value member")):
                    m = pattern.search(line)
                    if m:
                        yield f"{rel}:{lineno}: {what} ({m.group(0).strip()}) outside src/k8s and src/api"
                        break
            for start in include_lines:
                yield f"{rel}:{text.count(chr(10), 0, start) + 1}: RapidJSON included outside src/k8s and src/api"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = list(findings(root))
    for f in found:
        print(f)
    if found:
        print(f"{len(found)} place(s) read or build JSON outside src/k8s and src/api: decode with the codec "
              "(src/api/v1alpha1) or a view of src/k8s (objects.h, core_types.h) instead", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
