"""smoke: prove that each installed framework really trains on its device.

Every check (devices, cnn, oom, repro, amp, multi) is a standalone script under `checks/` run in
its own subprocess of the target interpreter with a timeout (`runner`); results are judged against
the machine's Facts and failures are linked to finding codes (`evaluate`, matrices/smoke.toml);
`suite` plans and runs them one at a time. Nothing here prints: render/smoke.py does.
"""

from envdoctor.smoke.results import SCHEMA, SmokeResult, document, exit_code
from envdoctor.smoke.suite import DEVICES, SmokeRequest, make_plan, run_plan

__all__ = ["DEVICES", "SCHEMA", "SmokeRequest", "SmokeResult", "document", "exit_code", "make_plan", "run_plan"]
