"""Reads audits' report.json files and prints their verdicts.

    verdicts.py table RECEIVER DB REPORT_DIR   Markdown rows: receiver, db, check, verdict, evidence
    verdicts.py tsv REPORT_DIR                 one "check<TAB>verdict" line per check, in order
"""
import json
import sys
from pathlib import Path


def checks(report_dir):
    """The audit's (check, status, evidence) triples, in the report's order."""
    report = json.loads((Path(report_dir) / "report.json").read_text())
    audit = report.get("audit") or report.get("body", {}).get("audit")
    if audit is None:
        raise SystemExit(f"verdicts.py: {report_dir}/report.json has no audit section")
    return [(c["check"], c["status"], c["evidence"]) for c in audit["checks"]]


def cell(text):
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def main(argv):
    if len(argv) == 5 and argv[1] == "table":
        _, _, receiver, db, report_dir = argv
        for check, status, evidence in checks(report_dir):
            print(f"| {receiver} | {db} | {check} | {status} | {cell(evidence)} |")
    elif len(argv) == 3 and argv[1] == "tsv":
        for check, status, _ in checks(argv[2]):
            print(f"{check}\t{status}")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
