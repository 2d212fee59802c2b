"""smoke: prove that each installed framework really trains on its device.

Every check (devices, cnn, oom, repro, amp, multi) is a function of a framework's script under
`checks/`; the checks of one framework run one after another in one subprocess of the target
interpreter (one import), each with its own timeout (`runner`); after a crash, a hang or a signal
the remaining checks move to a fresh subprocess. Results are judged against the machine's Facts and
failures are linked to finding codes and fixes (`evaluate`, matrices/smoke.toml); `suite` plans and
runs them. Nothing here prints: render/smoke.py does.
"""

from envdoctor.smoke.results import SCHEMA, SmokeResult, document, exit_code
from envdoctor.smoke.suite import DEVICES, SmokeRequest, make_plan, run_plan

__all__ = ["DEVICES", "SCHEMA", "SmokeRequest", "SmokeResult", "document", "exit_code", "make_plan", "run_plan"]
