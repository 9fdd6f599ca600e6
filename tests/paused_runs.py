"""``python tests/paused_runs.py run app.py …``: Streamlit's command line, each script run paused for
:data:`PAUSE` seconds as it begins, before it looks for a newer click and runs its widgets' callbacks
(``SafeSessionState.on_script_will_rerun``). A click sent once a run has started then lands in that stretch every
time, where Streamlit's own timing puts it there only now and then (``tests/test_session_protocol.py``)."""
import sys
import time

from streamlit.runtime.state.safe_session_state import SafeSessionState
from streamlit.web.cli import main

PAUSE = 0.5
_begin = SafeSessionState.on_script_will_rerun


def paused(self, *args, **kwargs):
    time.sleep(PAUSE)
    return _begin(self, *args, **kwargs)


if __name__ == "__main__":
    SafeSessionState.on_script_will_rerun = paused
    sys.exit(main())
