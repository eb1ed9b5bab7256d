"""The raw config.pbtxt editor: the same validate -> contract -> apply -> verify -> persist path as the knobs."""
from __future__ import annotations

import streamlit as st

from app.config.errors import ConfigError, ConfigParseError
from app.config.validate import problems
from app.lab.ports import LabPort
from app.text_limits import MAX_CONFIG_CHARS, config_size_problem
from app.ui.configure.apply_outcome import run_apply, show_outcome


def raw_editor(lab: LabPort, model: str, key: str, text: str, version: str) -> None:
    """An expander with the full config text, its syntax errors, diff, contract changes, Apply and download."""
    opened = f"{key}:{model}:raw:open"
    if f"{key}:raw:result" in st.session_state:
        st.session_state[opened] = True  # an outcome to show: open it
    box = st.expander("Edit config.pbtxt", key=opened, on_change="rerun")
    if not box.open:  # collapsed: no parsing, no diff, no text sent
        return
    with box:
        show_outcome(f"{key}:raw:result")
        if lab.file_text(model) is None and lab.server_facts().repository is not None:
            st.caption(f"`{model}` has no config.pbtxt: below is the config Triton auto-completed and serves. "
                       "Applying an edit writes it as the model's config.pbtxt.")
        if (too_large := config_size_problem(text)) is not None:  # the text area would cut it: edit it elsewhere
            st.error(f"This editor does not open it: {too_large}.")
            return
        edited = st.text_area("config.pbtxt", value=text, height=360, key=f"{key}:{model}:raw:{version}",
                              max_chars=MAX_CONFIG_CHARS,
                              help="The whole file. Apply validates it, checks the contract, reloads the model, "
                                   "checks it serves, and only then writes the file.")
        st.download_button("Download the current config.pbtxt", text, file_name=f"{model}.config.pbtxt",
                           mime="text/plain", key=f"{key}:{model}:download")
        if edited == text:
            st.caption("No change yet.")
            return
        if len(edited) >= MAX_CONFIG_CHARS:  # the box cuts a longer paste at its limit: never apply a cut text
            st.error(f"The text reached the editor's limit of {MAX_CONFIG_CHARS:,} characters (256 KiB), so anything "
                     "past it was cut off; it is not applied. Edit the file itself.")
            return
        try:
            config, diff, changes = lab.preview_text(model, edited)
        except ConfigParseError as exc:
            where = f"line {exc.line}, column {exc.column}: " if exc.line else ""
            st.error(f"Syntax error — {where}{exc}")
            return
        except ConfigError as exc:
            st.error(str(exc))
            return
        try:
            found = problems(config, lab.server_caps())
        except ConfigError as exc:
            st.error(str(exc))
            return
        for problem in found:
            st.error(f"{problem.field}: {problem.message}")
        st.code(diff or "no change", language="diff")
        confirm = False
        if changes:
            st.warning("This changes the model's contract with its clients:\n\n" + "\n".join(f"- {c}" for c in changes))
            confirm = st.checkbox("I accept the contract change", key=f"{key}:{model}:raw:confirm:{version}")
        cannot = lab.apply_blocked()
        if st.button("Apply the edited config", type="primary",
                     disabled=bool(found) or not diff or (bool(changes) and not confirm) or bool(cannot),
                     key=f"{key}:{model}:raw:apply", help=cannot):
            run_apply(f"{key}:raw:result", lambda ok: lab.apply_text(model, edited, "raw config edit", base=version,
                                                                     confirm_contract=ok or confirm))
            show_outcome(f"{key}:raw:result")
