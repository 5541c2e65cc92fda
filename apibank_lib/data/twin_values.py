"""The ``values`` change of a twin: which values a benchmark holds, and what each becomes.

:func:`collect_values` reads a benchmark's data (databases, recordings, dialogues' calls and results, level-3 steps)
and builds its :class:`~apibank_lib.env.values.ValueMap` from the fields whose kind the tools fix:

* people (``patient_name``, ``doctor_name``, ``attendees`` ...) and user names that are two name words
  (``AliceMorgan``): each word is replaced by a name of the same kind from ``data/twins/values.yaml``, and the user
  names and the e-mail addresses built from those words are rebuilt from the new ones;
* other user names, passwords, tokens, appointment ids and the e-mail addresses not built from a name: a replacement
  of the same format that reads as the source does: a word-like run of letters ("admin", "pass") becomes a word of
  its length and case from the same file's ``words``, any other run is scrambled letter for letter (of the same
  case) and digit for digit, the rest kept;
* dates: a shift of 5 to 12 weeks, the seed choosing.

A value under five characters, and a value equal to a field name ("password" as a password: the data's keys are
rewritten too), keeps its form.

The seed decides every choice through a hash of the value, so a value's replacement does not depend on which
other values the benchmark holds. :func:`rewrite_values` then applies the map to every file of a twin.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.yamlfile import read_yaml
from apibank_lib.env.values import MONTHS, ValueMap

__all__ = ["collect_values", "rewrite_values", "values_path"]

PERSON_FIELDS = frozenset({"patient_name", "doctor_name", "new_appointment_doctor", "attendees", "meeting_attendees",
                           "member_name"})
"""Fields that hold people's names (a name, or a list of names)."""

USER_FIELDS = frozenset({"username", "user_name"})
SECRET_FIELDS = frozenset({"password", "old_password", "new_password", "token", "appointment_id"})
EMAIL_FIELDS = frozenset({"email", "receiver", "recipient"})
KEYED_BY = {"Account": USER_FIELDS, "Appointments": frozenset({"appointment_id"})}
"""Databases whose keys are values of a kind (the accounts by user name, the appointments by id)."""

_SHORTEST = 5  # a shorter user name or secret ("foo", "1") would be found in unrelated text: it keeps its form
_TITLES = frozenset({"Dr", "Mr", "Mrs", "Ms", "Prof", "Sir"})
_NOT_NAMES = frozenset(MONTHS) | {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"} | _TITLES
_PERSON = re.compile(r"(?:(?P<title>Dr|Mr|Mrs|Ms|Prof)\.? )?(?P<words>[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2})")
_EMAILS_URLS = re.compile(r"\S+@\S+|https?://\S+")
_NAME_WORD = re.compile(r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?")
_EMAIL = re.compile(r"^([A-Za-z0-9._+-]+)@([A-Za-z0-9.-]+)$")


def values_path() -> Path:
    """Where the replacement names and words lie."""
    return PROJECT_ROOT / "data" / "twins" / "values.yaml"


def _hash(seed: int, where: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:values:{where}".encode()).digest()[:8], "big")


def _same_format(value: str, seed: int, taken: set[str]) -> str:
    """Each letter by a letter of its case, each digit by a digit (a digit first stays non-zero)."""
    for attempt in range(100):
        out = []
        for i, c in enumerate(value):
            r = _hash(seed, f"{value}#{attempt}#{i}")
            if c in string.digits:
                out.append(str(r % 9 + 1) if i == 0 and c != "0" else str(r % 10))
            elif c in string.ascii_lowercase:
                out.append(string.ascii_lowercase[r % 26])
            elif c in string.ascii_uppercase:
                out.append(string.ascii_uppercase[r % 26])
            else:
                out.append(c)
        new = "".join(out)
        if new != value and new not in taken:
            return new
    raise ValueError(f"no replacement of {value!r}'s format is free")


_RUNS = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]+")


def _word_like(run: str) -> bool:
    """A run of letters that reads as a word ("admin", "pass"), not as random letters ("xq", "kzt")."""
    return len(run) >= 3 and bool(re.search(r"[aeiouy]", run.lower())) and not re.search(r"[^aeiouy]{4}", run.lower())


def _natural(value: str, seed: int, taken: set[str], words: Mapping[int, list[str]]) -> str:
    """A value of the same format that reads as the source's does: each word-like run of letters becomes a word of
    its length and case from ``words``, every other run is scrambled letter for letter, digit for digit."""
    runs = _RUNS.findall(value)
    for attempt in range(100):
        out = []
        for i, run in enumerate(runs):
            options = words.get(len(run)) or []
            cased = run.islower() or run.isupper() or (run[0].isupper() and run[1:].islower())
            if run.isalpha() and options and cased and _word_like(run):
                word = options[_hash(seed, f"{value}#{attempt}#{i}") % len(options)]
                out.append(word.upper() if run.isupper() else word.capitalize() if run[0].isupper() else word)
            elif run.isalnum():
                out.append(_same_format(run, seed + attempt, set()))
            else:
                out.append(run)
        new = "".join(out)
        if new != value and new not in taken:
            return new
    return _same_format(value, seed, taken)


def _walk(value: Any, key: str | None = None) -> Iterator[tuple[str, str]]:
    """(field, text) for every string under a field, lists included."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k if isinstance(k, str) else key)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    elif isinstance(value, str) and key is not None:
        yield key, value


_DATABASE_FOLDERS = ("init_database", "recordings", "lv3_database")


def _data_files(root: Path) -> Iterator[Path]:
    """Every data file a twin rewrites: databases, recordings, level-3 tables, dialogues (``.jsonl``), level-3 items."""
    for folder in _DATABASE_FOLDERS:
        yield from sorted((root / folder).glob("*.json"))
    yield from sorted((root / "lv1-lv2-samples").glob("*/*.jsonl"))
    if (root / "test-data" / "level-3.json").is_file():
        yield root / "test-data" / "level-3.json"


def _documents(root: Path) -> Iterator[tuple[str, Any]]:
    """(database name or '', JSON) for every data file a twin rewrites (dialogue lines one by one)."""
    for path in _data_files(root):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            yield from (("", json.loads(line)) for line in text.splitlines() if line.strip())
        else:
            yield (path.stem if path.parent.name in _DATABASE_FOLDERS else ""), json.loads(text)


_ENVELOPE_KEYS = frozenset({"role", "text", "api_name", "param_dict", "result", "input", "output", "exception",
                            "requirement", "response", "apis"})


def _field_names() -> frozenset[str]:
    """Every name the data uses as a field: the tools' parameters and outputs, the databases' record fields, the
    records' own keys. A value equal to one ("password" as a password) keeps its form: the data's keys are rewritten
    with its values (databases keyed by user or date), and a field must not change."""
    from apibank_lib.env.shapes import DictOf, ListOf, Record
    from apibank_lib.env.tools.registry import database_shapes, toolset_for_level

    names = set(_ENVELOPE_KEYS)
    for level in (1, 3):
        ts = toolset_for_level(level)
        for api in ts:
            tool = ts.get(api)
            names.update(tool.input_parameters, getattr(tool, "output_parameters", {}) or {})
    stack: list[object] = list(database_shapes().values())
    while stack:
        shape = stack.pop()
        if isinstance(shape, Record):
            names.update(shape.required, shape.optional)
            stack += [*shape.required.values(), *shape.optional.values()]
        elif isinstance(shape, DictOf):
            stack.append(shape.value)
        elif isinstance(shape, ListOf):
            stack.append(shape.item)
    return frozenset(names)


def _split_user(name: str) -> list[str] | None:
    """The name words of a user name built from them (``AliceMorgan``, ``JohnSmith123``: the digits stay), or None."""
    letters = name.rstrip(string.digits)
    words = _NAME_WORD.findall(letters)
    return words if len(words) >= 2 and "".join(words) == letters and not set(words) & _NOT_NAMES else None


def _person_words(person: str) -> list[tuple[str, str]] | None:
    """(word, kind) for a person's name ("Alice Morgan", "Dr. Okafor"), or None where the text is not one."""
    m = _PERSON.fullmatch(person.strip())
    if m is None:
        return None
    words = m.group("words").replace("-", " ").split()
    if set(words) & _NOT_NAMES or (len(words) == 1 and not m.group("title")):
        return None
    return [(w, "last_names" if i == len(words) - 1 and (len(words) > 1 or m.group("title")) else "first_names")
            for i, w in enumerate(words)]


def collect_values(root: str | Path, seed: int, *, table: dict[str, list[str]] | None = None) -> ValueMap:
    """The value map of the benchmark under ``root`` (see the module's docstring)."""
    root = Path(root)
    persons: set[str] = set()
    users: set[str] = set()
    secrets: set[str] = set()
    emails: set[str] = set()
    texts: list[str] = []  # every document as text, for the words the data already uses
    for name, doc in _documents(root):
        texts.append(json.dumps(doc, ensure_ascii=False))
        keyed = KEYED_BY.get(name)
        if keyed and isinstance(doc, dict):
            (users if keyed is USER_FIELDS else secrets).update(k for k in doc if isinstance(k, str))
        for key, text in _walk(doc):
            if key in PERSON_FIELDS:
                persons.add(text)
            elif key in USER_FIELDS:
                users.add(text)
            elif key in SECRET_FIELDS:
                secrets.add(text)
            elif key in EMAIL_FIELDS and _EMAIL.match(text):
                emails.add(text)
    fields = _field_names()
    users, secrets, emails = users - fields, secrets - fields, emails - fields
    text = "\n".join(texts)
    present = set(re.findall(r"[A-Za-z]+", text)) | set(_NAME_WORD.findall(text)) | persons | users | secrets | emails
    table = table if table is not None else read_yaml(values_path())

    # Person words: the last word of a name is a family name, the others first names; a user name of two words
    # (AliceMorgan) counts as a person.
    people = [_person_words(p) for p in sorted(persons)]
    people += [[(w, "first_names"), *((x, "last_names") for x in ws[1:])] for u in sorted(users) if (ws := _split_user(u))
               for w in ws[:1]]
    people += [[(u, "first_names")] for u in sorted(users) if _NAME_WORD.fullmatch(u) and u not in _NOT_NAMES]
    # A word written in lower case elsewhere ("board", "mark") is a common word as well: it keeps its form, since
    # replacing it would change sentences that are not about a person.
    common = set(re.findall(r"(?<![@.\w])[a-z]+(?![@.\w])", _EMAILS_URLS.sub(" ", text)))
    votes: dict[str, Counter[str]] = {}
    for person in people:
        for w, kind in person or []:
            if w.lower() not in common:
                votes.setdefault(w, Counter())[kind] += 1
    # A word seen as a first name and as a family name ("Dr. John") takes the role it has more often.
    kinds = {w: max(sorted(c), key=lambda k: (c[k], k == "first_names")) for w, c in votes.items()}
    words: dict[str, str] = {}
    taken = set(present)
    for w in sorted(kinds):
        options = [n for n in table.get(kinds[w], []) if n not in taken]
        new = options[_hash(seed, w) % len(options)] if options else _same_format(w, seed, taken)
        words[w] = new
        taken.add(new)

    exact: dict[str, str] = {}
    words_by_length = {int(k): list(v) for k, v in (table.get("words") or {}).items()}
    # A replacement of a whole value must not be a value being replaced (the map is one-to-one); unlike a name word,
    # it may be a word the data uses elsewhere ("feather" as a password).
    taken = users | secrets | emails | set(words) | set(words.values())
    lower = {w.lower(): n.lower() for w, n in words.items()}
    for u in sorted(u for u in users if u not in words and (len(u) >= _SHORTEST or _split_user(u))):
        parts = _split_user(u)
        if parts:
            exact[u] = "".join(words.get(p, p) for p in parts) + u[len("".join(parts)):]
        else:
            exact[u] = _email_local(u, lower) or _natural(u, seed, taken, words_by_length)
        if exact[u] == u:  # every word of it keeps its form
            del exact[u]
            continue
        taken.add(exact[u])
    for e in sorted(emails):
        local, domain = _EMAIL.match(e).groups()  # type: ignore[union-attr]
        local_new = exact.get(local) or _email_local(local, lower) or _natural(local, seed, taken, words_by_length)
        exact[e] = f"{local_new}@{domain}"
        if exact[e] == e:
            del exact[e]
            continue
        taken.add(exact[e])
    for s in sorted(secrets - set(exact)):
        if len(s) >= _SHORTEST and s not in words:
            exact[s] = _natural(s, seed, taken, words_by_length)
            taken.add(exact[s])
    weeks = 5 + _hash(seed, "dates") % 8
    return ValueMap(exact, words, 7 * weeks)


def _email_local(local: str, lower: dict[str, str]) -> str | None:
    """An address's local part rebuilt from new name words ("alice.morgan" -> "nora.fischer", "johndoe" ->
    "peterlee"); None where its letters are not name words."""
    pieces = re.split(r"([._+-]|\d+)", local)
    out = []
    for p in pieces:
        if not p or not p.isalpha():
            out.append(p)
            continue
        if p in lower:
            out.append(lower[p])
            continue
        split = next(((p[:i], p[i:]) for i in range(2, len(p) - 1) if p[:i] in lower and p[i:] in lower), None)
        if split is None:
            return None
        out.append(lower[split[0]] + lower[split[1]])
    return "".join(out)


def rewrite_values(out: Path, values: ValueMap) -> int:
    """Apply ``values`` to every data file under a twin's root ``out``; returns how many files were rewritten."""
    count = 0
    for path in _data_files(out):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            lines = [json.loads(x) for x in text.splitlines() if x.strip()]
            path.write_text("".join(json.dumps(values.json(x), ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
        else:
            indent = 1 if path.parent.name in _DATABASE_FOLDERS else 2
            path.write_text(json.dumps(values.json(json.loads(text)), ensure_ascii=False, indent=indent) + "\n", encoding="utf-8")
        count += 1
    return count
