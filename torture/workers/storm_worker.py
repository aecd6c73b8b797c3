"""A Python worker for the storm campaign (`cargo xtask torture`).

Claims, renews and completes jobs of $TENURE_PRODUCTION in $TENURE_DB with
short TTLs for $TENURE_MILLIS ms, sometimes overrunning its lease on purpose,
appends each minted token to $TENURE_SECRETS_FILE (for the secret scan) and
prints ``STORM <completed> <rejected>``. Any other error is raised.
"""

import datetime
import os
import random
import time

import tenure


def main() -> None:
    a = tenure.Authority(os.environ["TENURE_DB"], busy_timeout=datetime.timedelta(seconds=30))
    prod = os.environ["TENURE_PRODUCTION"]
    end = time.monotonic() + int(os.environ["TENURE_MILLIS"]) / 1000
    holder = f"storm-py-{os.getpid()}"
    rng = random.Random(os.getpid())
    secrets = os.environ.get("TENURE_SECRETS_FILE")
    done = rejected = 0
    while time.monotonic() < end:
        try:
            lease = a.claim_next(prod, holder, datetime.timedelta(milliseconds=200 + rng.randrange(600)))
        except (tenure.NoJobAvailable, tenure.Busy):
            time.sleep(0.005)
            continue
        if secrets:
            with open(secrets, "a") as f:
                f.write(lease.export_token() + "\n")
        time.sleep(0.9 if rng.randrange(20) == 0 else rng.randrange(20) / 1000)
        try:
            lease.renew(datetime.timedelta(seconds=1))
            lease.complete({"by": holder})
            done += 1
        except (tenure.StaleLease, tenure.LeaseExpired, tenure.Cancelled, tenure.Busy):
            rejected += 1
    print(f"STORM {done} {rejected}")


if __name__ == "__main__":
    main()
