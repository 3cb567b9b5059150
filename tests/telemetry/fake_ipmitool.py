"""A stand-in for `ipmitool dcmi power reading` where no BMC exists (run as a script by the tests).

Prints what ipmitool 1.8 prints for a DCMI power reading, with the average taken from
FAKE_DCMI_WATTS (default 1390), and appends its arguments and whether IPMI_PASSWORD was
set to FAKE_DCMI_LOG, so a test can check the password never rode on the command line.
FAKE_DCMI_STATE="deactivated" reports a BMC whose power reading is switched off;
FAKE_DCMI_FAIL=1 exits 1 as ipmitool does when the BMC does not answer.
"""

from __future__ import annotations

import json
import os
import sys

OUTPUT = """
    Instantaneous power reading:                   {now} Watts
    Minimum during sampling period:                {low} Watts
    Maximum during sampling period:                {high} Watts
    Average power reading over sample period:      {average} Watts
    IPMI timestamp:                           Fri Dec  4 00:20:00 2026
    Sampling period:                          00000005 Seconds.
    Power reading state is:                   {state}

"""


def main() -> int:
    """Print one DCMI power reading (or fail as asked)."""
    log = os.environ.get("FAKE_DCMI_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "password_set": "IPMI_PASSWORD" in os.environ}) + "\n")
    if os.environ.get("FAKE_DCMI_FAIL"):
        print("Error: Unable to establish IPMI v2 / RMCP+ session", file=sys.stderr)
        return 1
    if sys.argv[-3:] != ["dcmi", "power", "reading"]:
        print(f"unexpected arguments {sys.argv[1:]}", file=sys.stderr)
        return 2
    average = int(os.environ.get("FAKE_DCMI_WATTS", "1390"))
    state = os.environ.get("FAKE_DCMI_STATE", "activated")
    print(OUTPUT.format(now=average + 8, low=average - 300, high=average + 150, average=average, state=state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
