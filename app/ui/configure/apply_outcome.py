"""An Apply's or Undo's outcome across the rerun that redraws the page: run it, keep what happened (or the contract
question) in the session, and show it once — for the knobs (app.ui.page.layout) and the raw editor (app.ui.configure.editor)."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.config.errors import (ConfigError, ConfigRolledBackError, ContractChangeError, StaleConfigError,
                               UnrecordedError, clean)


def run_apply(result_key: str, action: Callable[[bool], object], confirm: bool = False) -> None:
    """Run an apply or undo; keep its outcome (or the contract question) for the rerun that redraws the knobs."""
    try:
        result = action(confirm)
    except ContractChangeError as exc:
        st.session_state[result_key] = ("confirm", exc, action)
        return
    except StaleConfigError as exc:
        st.session_state[result_key] = ("error", f"Not applied — {exc}")
        st.rerun()
    except ConfigRolledBackError as exc:
        st.session_state[result_key] = ("error", f"Rolled back — {exc}")
        st.rerun()
    except UnrecordedError as exc:  # the server took it; only its record failed
        st.session_state[result_key] = ("error", f"Applied — {exc}")
        st.rerun()
    except ConfigError as exc:
        st.session_state[result_key] = ("error", f"Not applied — {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - a dead server must not crash the page
        st.session_state[result_key] = ("error", f"Not applied: the server did not answer ({clean(str(exc))}).")
        return
    st.session_state[result_key] = ("ok", result.message, None if result.persisted else (result.model, result.new_text))
    st.rerun()


def show_outcome(result_key: str) -> None:
    """Show the last apply's outcome; for a contract change, the changes and a button to confirm them."""
    outcome = st.session_state.get(result_key)
    if not outcome:
        return
    if outcome[0] != "confirm":
        st.session_state.pop(result_key, None)
        (st.success if outcome[0] == "ok" else st.error)(outcome[1])
        if outcome[0] == "ok" and len(outcome) > 2 and outcome[2]:  # applied where the lab cannot write the file
            model, text = outcome[2]
            st.download_button("Download this config.pbtxt", text, file_name=f"{model}.config.pbtxt",
                               mime="text/plain", key=f"{result_key}:download", on_click="ignore")
        return
    _, exc, action = outcome
    st.warning("**This changes the model's contract with its clients** — requests built for the old config may "
               "fail:\n\n" + "\n".join(f"- {c}" for c in exc.changes))
    c1, c2 = st.columns(2)
    if c1.button("Apply anyway: I accept the contract change", key=f"{result_key}:confirm"):
        st.session_state.pop(result_key, None)
        run_apply(result_key, action, confirm=True)
        show_outcome(result_key)
    elif c2.button("Cancel", key=f"{result_key}:cancel"):
        st.session_state.pop(result_key, None)
        st.rerun()
