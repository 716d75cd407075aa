"""The agent-success suite's tasks: data only. Each names a workspace, the tool files the bench registers,
the task text (the session's first user message, verbatim), a step budget and a checker.

A checker reads the final answer and, where the task changes files, the workspace copy the run worked in,
and says whether every part is right (and if not, what was wrong). Checkers are tolerant of phrasing
(numbers as digits in any format, names in any case, file names with or without their folder) and strict on
content: a multi-part question fails when any part is missing or wrong. Expected values are computed from
the workspace files where that is simple, so that a change to a workspace cannot leave a checker stale.

The product never reads this file: nothing here is special-cased in the daemon.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mini_agent.cli.demo import TASK as SEED_TEXT

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

Verdict = tuple[bool, str]
Checker = Callable[[str, Path], Verdict]


@dataclass(frozen=True)
class Workspace:
    name: str
    path: Path
    tools: tuple[str, ...]  # files registered with agent/registerTool, relative to the root
    files: dict[str, str] = field(default_factory=dict)  # written into each copy (kept out of the repo)


@dataclass(frozen=True)
class Task:
    id: str
    workspace: Workspace
    text: str
    check: Checker
    max_steps: int = 6
    kind: str = ""  # what the task exercises, for the README's list
    edits: bool = False  # changes files (behind approval)


# -- workspaces ------------------------------------------------------------------------------------

# A Python 2 module: `outline` raises SyntaxError on it. Written into each copy rather than kept in the
# repository, where the linters would refuse it.
OLD_PRICING = '''# The pricing module of the first version, kept for reference. Python 2.

VAT = 0.19


def gross(net):
    total = net * (1 + VAT)
    print "gross price:", total
    return total
'''

EXAMPLE = Workspace("example", ROOT / "server" / "mini_agent" / "examples" / "workspace",
                    ("tools.py", "metrics.py"))
SHOP = Workspace("shop", HERE / "workspaces" / "shop", ("tools.py",), {"legacy/old_pricing.py": OLD_PRICING})
NOTES = Workspace("notes", HERE / "workspaces" / "notes", ("tools.py",))
DATA = Workspace("data", HERE / "workspaces" / "data", ("tools.py",))
WORKSPACES = (EXAMPLE, SHOP, NOTES, DATA)


# -- checker building blocks -----------------------------------------------------------------------

NEGATION = re.compile(r"\b(no|not|none|cannot|can't|isn't|doesn't|does not|do not|don't|missing|"
                      r"fails?|failed|invalid|error|unable)\b", re.IGNORECASE)


def numbers(text: str) -> list[float]:
    """Every number written in digits: "1,200", "1 200", "8600.0", "23.0" and "-3" count."""
    found = []
    for match in re.finditer(r"-?\d+(?:[,_]\d{3})*(?:\.\d+)?", text):
        try:
            found.append(float(match.group().replace(",", "").replace("_", "")))
        except ValueError:
            continue
    return found


def has_number(text: str, expected: float, tolerance: float = 0.051) -> bool:
    return any(abs(value - expected) <= tolerance for value in numbers(text))


def mentions(text: str, name: str) -> bool:
    """`name` appears as a word (case-insensitive); a file name may come with or without its folder."""
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text, re.IGNORECASE) is not None


def non_empty_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def all_lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


Part = Callable[[str, Path], str | None]  # None: right; else what is wrong


def number_part(expected: Callable[[Path], float] | float, what: str, tolerance: float = 0.051) -> Part:
    def part(answer: str, root: Path) -> str | None:
        value = expected(root) if callable(expected) else expected
        return None if has_number(answer, value, tolerance) else f"{what}: {value:g} not in the answer"
    return part


def names_part(*names: str, what: str = "names") -> Part:
    def part(answer: str, root: Path) -> str | None:
        missing = [name for name in names if not mentions(answer, name)]
        return f"{what}: missing {missing}" if missing else None
    return part


def without_part(*names: str, what: str = "wrong names") -> Part:
    def part(answer: str, root: Path) -> str | None:
        present = [name for name in names if mentions(answer, name)]
        return f"{what}: the answer names {present}" if present else None
    return part


def negative_part(what: str) -> Part:
    def part(answer: str, root: Path) -> str | None:
        return None if NEGATION.search(answer) else f"{what}: the answer does not say no"
    return part


def any_of(*parts: Part, what: str) -> Part:
    def part(answer: str, root: Path) -> str | None:
        return None if any(p(answer, root) is None for p in parts) else what
    return part


def checks(*parts: Part) -> Checker:
    """Right when every part is right."""
    def check(answer: str, root: Path) -> Verdict:
        problems = [problem for p in parts if (problem := p(answer, root)) is not None]
        return (not problems, "; ".join(problems) or "ok")
    return check


def python_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.py"))


# -- file checks -------------------------------------------------------------------------------------


def file_part(relative: str, test: Callable[[str], str | None]) -> Part:
    def part(answer: str, root: Path) -> str | None:
        path = root / relative
        if not path.is_file():
            return f"{relative} is gone"
        return test(path.read_text(encoding="utf-8"))
    return part


def same_but(original: Path, replaced: dict[str, str]) -> Callable[[str], str | None]:
    """The file is the original with exactly these line replacements, and still parses."""
    def test(text: str) -> str | None:
        expected = original.read_text(encoding="utf-8")
        for old, new in replaced.items():
            expected = expected.replace(old, new)
        if text == expected:
            return None
        try:
            ast.parse(text)
        except SyntaxError as exc:
            return f"the edited file no longer parses: {exc}"
        return "the file differs from the expected edit"
    return test


def appended(original: Path, line: str) -> Callable[[str], str | None]:
    def test(text: str) -> str | None:
        before = original.read_text(encoding="utf-8")
        if not text.startswith(before):
            return "the note's earlier content changed"
        added = [added.strip() for added in text[len(before):].splitlines() if added.strip()]
        return None if added == [line] else f"added {added!r}, expected [{line!r}]"
    return test


# -- the tasks ---------------------------------------------------------------------------------------

def example_files(answer: str, root: Path) -> str | None:
    return names_part(*python_files(root), what="the Python files")(answer, root)


TASKS: list[Task] = [
    # the example workspace: list_python_files(directory), count_file_lines(file_path, ignore_empty),
    # average(values)
    Task("seed", EXAMPLE, SEED_TEXT,
         checks(example_files, number_part(lambda r: non_empty_lines(r / "schema.py"), "schema.py's count")),
         kind="multi-part; self-repair (file_path)"),
    Task("example-count-metrics", EXAMPLE, "How many non-empty lines does metrics.py have?",
         checks(number_part(lambda r: non_empty_lines(r / "metrics.py"), "the count")), max_steps=4,
         kind="one call; self-repair (file_path)"),
    Task("example-all-lines", EXAMPLE,
         "How many lines does tools.py have in total, counting empty lines too?",
         checks(number_part(lambda r: all_lines(r / "tools.py"), "the count")), max_steps=4,
         kind="a non-default argument"),
    Task("example-longest", EXAMPLE,
         "Which Python file in the workspace has the most non-empty lines, and how many does it have?",
         checks(lambda a, r: names_part(max(python_files(r), key=lambda n: non_empty_lines(r / n)))(a, r),
                number_part(lambda r: max(non_empty_lines(r / n) for n in python_files(r)), "the count")),
         max_steps=8, kind="multi-step (list, count each)"),
    Task("example-average", EXAMPLE,
         "What is the average number of non-empty lines of the Python files in the workspace? Count each "
         "file with the tools, then use the average tool.",
         checks(number_part(lambda r: sum(non_empty_lines(r / n) for n in python_files(r))
                            / len(python_files(r)), "the average", tolerance=0.06)),
         max_steps=9, kind="6-8 steps (list, count three files, average, answer)"),
    Task("example-missing-folder", EXAMPLE, "Which Python files are in the folder 'src' of the workspace?",
         checks(negative_part("there is no src folder")), max_steps=4, kind="a tool that raises"),
    Task("example-average-empty", EXAMPLE,
         "Call the average tool with an empty list of values. What does it report?",
         checks(any_of(names_part("ValueError"), names_part("cannot average"),
                       what="the error (ValueError: cannot average an empty list) is not in the answer")),
         max_steps=4, kind="a tool that raises"),
    Task("no-tool-arithmetic", EXAMPLE, "What is 17 multiplied by 23? No tool is needed for this.",
         checks(number_part(391, "the product")), max_steps=3, kind="no tool needed"),
    Task("no-tool-knowledge", EXAMPLE,
         "What is the capital of France? Answer in one sentence; no tool is needed.",
         checks(names_part("Paris")), max_steps=3, kind="no tool needed"),

    # shop: a small Python package; list_files, read_file, outline(module_path), search, replace_in_file
    Task("shop-version", SHOP, "What version number does the shop package declare?",
         checks(names_part("1.4.2", what="the version")), max_steps=5),
    Task("shop-vat", SHOP,
         "What VAT rate does shop/pricing.py use, and which function adds VAT to a net price?",
         checks(any_of(number_part(0.2, "rate", tolerance=0.0001), number_part(20, "rate", tolerance=0.0001),
                       what="the VAT rate (0.2 or 20 %) is not in the answer"),
                names_part("gross_price")), max_steps=5, kind="multi-part"),
    Task("shop-classes", SHOP, "Which classes are defined in shop/models.py?",
         checks(names_part("Product", "Customer", "Order")), max_steps=4,
         kind="self-repair (module_path)"),
    Task("shop-methods", SHOP, "Which methods does the Inventory class in shop/storage.py have?",
         checks(names_part("add", "remove", "count", "skus")), max_steps=4),
    Task("shop-legacy-parse", SHOP,
         "Does legacy/old_pricing.py parse as Python 3? If not, on which line is the problem?",
         checks(negative_part("it does not parse"), number_part(8, "the line")), max_steps=5,
         kind="a tool that raises; multi-part"),
    Task("shop-discount-codes", SHOP,
         "Which discount codes does shop/pricing.py accept, and how many percent does each one give?",
         checks(names_part("WELCOME10", "SPRING15", "VIP25"), number_part(10, "WELCOME10's percent"),
                number_part(15, "SPRING15's percent"), number_part(25, "VIP25's percent")),
         max_steps=5, kind="multi-part"),
    Task("shop-callers", SHOP,
         "Which files use the function apply_discount, apart from the file that defines it?",
         checks(names_part("models.py", "test_pricing.py"), without_part("storage.py")), max_steps=5),
    Task("shop-test-count", SHOP, "How many test functions does tests/test_pricing.py define?",
         checks(number_part(5, "the count")), max_steps=4),
    Task("shop-set-vat", SHOP, "Change the VAT rate in shop/pricing.py from 0.2 to 0.25.",
         checks(file_part("shop/pricing.py", same_but(SHOP.path / "shop" / "pricing.py",
                                                     {"VAT_RATE = 0.2\n": "VAT_RATE = 0.25\n"}))),
         max_steps=5, kind="a file edit behind approval", edits=True),
    Task("shop-rename-method", SHOP,
         "In shop/storage.py, rename the Inventory method `count` to `quantity`. Change nothing else.",
         checks(file_part("shop/storage.py", same_but(SHOP.path / "shop" / "storage.py",
                                                     {"def count(": "def quantity("}))),
         max_steps=5, kind="a file edit behind approval", edits=True),

    # notes: list_notes(tag), read_note(name), search_notes(text), append_to_note(name, line)
    Task("notes-meetings", NOTES, "How many notes are there in all, and which of them are tagged 'meeting'?",
         checks(number_part(6, "the number of notes"),
                names_part("2026-11-03-standup", "2026-11-10-standup", "2026-11-17-retro",
                           what="the meeting notes")),
         max_steps=5, kind="multi-part"),
    Task("notes-migration", NOTES, "According to the notes, who is responsible for the database migration?",
         checks(names_part("Priya")), max_steps=5),
    Task("notes-release", NOTES,
         "When is the release planned, according to the most recent standup note?",
         checks(number_part(28, "the date"), names_part("November", what="the month")),
         max_steps=5, kind="pick the right note"),
    Task("notes-open-todos", NOTES,
         "How many items in todo.md are still open (unchecked), and which of them is about CI?",
         checks(number_part(3, "the count"), names_part("flaky", what="the CI item")), max_steps=4,
         kind="multi-part"),
    Task("notes-add-todo", NOTES, "Add the line '- [ ] Renew the SSL certificate' at the end of todo.md.",
         checks(file_part("notes/todo.md", appended(NOTES.path / "notes" / "todo.md",
                                                     "- [ ] Renew the SSL certificate"))),
         max_steps=4, kind="a file edit behind approval", edits=True),

    # data: list_datasets, describe_csv(path), sum_column(path, column, where), count_rows, read_json
    Task("data-shape", DATA, "How many data rows does data/sales.csv have, and what are its columns?",
         checks(number_part(12, "the row count"),
                names_part("region", "month", "product", "units", "revenue", what="the columns")),
         max_steps=4, kind="multi-part"),
    Task("data-north-revenue", DATA, "What was the total revenue of the North region in data/sales.csv?",
         checks(number_part(7500, "the revenue")), max_steps=4),
    Task("data-best-region", DATA,
         "Which region has the highest total revenue in data/sales.csv, and how much is it? Sum the revenue "
         "of each region with the tools.",
         checks(names_part("South"), number_part(8600, "its revenue")), max_steps=8,
         kind="6-8 steps (describe, one sum per region, answer)"),
    Task("data-march-widgets", DATA,
         "How many units of the product 'widget' were sold in the month 2026-03, all regions together?",
         checks(number_part(205, "the units")), max_steps=5, kind="two conditions"),
    Task("data-germany", DATA,
         "How many customers in data/customers.json are from Germany, and who are they?",
         checks(number_part(3, "the count"), names_part("Ada Klein", "Dieter Braun", "Greta Vogel")),
         max_steps=4, kind="multi-part"),
    Task("data-retention", DATA,
         "What are the retention_days and the export format set in data/config.json?",
         checks(number_part(45, "retention_days"), names_part("csv", what="the export format")),
         max_steps=4, kind="multi-part"),
    Task("data-wrong-column", DATA, "What is the sum of the column 'sales' in data/sales.csv?",
         checks(any_of(negative_part("there is no such column"), number_part(29300, "the revenue total"),
                       what="neither says there is no 'sales' column nor gives the revenue total")),
         max_steps=4, kind="a tool that raises"),
]


def by_id(ids: list[str] | None) -> list[Task]:
    """The tasks whose id is in `ids` (all without a filter), in suite order; an unknown id is an error."""
    if not ids:
        return list(TASKS)
    known = {task.id for task in TASKS}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise SystemExit(f"unknown task ids {unknown}; known: {sorted(known)}")
    return [task for task in TASKS if task.id in ids]
