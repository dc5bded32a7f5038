"""Compares an audit's verdicts with the committed ones.

    compare.py EXPECTED.tsv ACTUAL.tsv

EXPECTED holds one "check<TAB>verdicts" line per check ('#' lines are comments), verdicts being
one status or several joined by '|' for a check whose verdict varies from run to run on this
machine (a capacity measured against a shared CPU). Every check in either file must be in the
other. Exits 0 when each actual verdict is one the expected line allows, 1 otherwise (saying
which), 2 when a file cannot be read.
"""
import sys


def read(path):
    """{check: set of verdicts} from a tab-separated file."""
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as err:
        print(f"compare.py: {err}", file=sys.stderr)
        sys.exit(2)
    table = {}
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        check, _, verdicts = line.partition("\t")
        table[check] = set(verdicts.split("|"))
    return table


def main(expected_path, actual_path):
    expected, actual = read(expected_path), read(actual_path)
    wrong = []
    for check in sorted(expected.keys() | actual.keys()):
        want, got = expected.get(check), actual.get(check)
        if want is None or got is None or not got <= want:
            wrong.append(f"{check}: expected {'|'.join(sorted(want or {'(absent)'}))}, got {'|'.join(sorted(got or {'(absent)'}))}")
    for line in wrong:
        print(f"compare.py: {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
