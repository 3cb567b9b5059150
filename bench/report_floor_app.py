"""The floor of bench.report_speed: a Streamlit page with nothing of the report, the same waits.

A heading where the report's first figure is (``.st-key-headline h3``), a select box where its run
picker is and four small Vega-Lite charts where its charts are, on no ledger: what Streamlit itself
takes to start a page in a new browser tab, draw a heading and load its chart library, timed in
the same run as the report (`python -m bench.report_speed` serves it, as `wattlog report` serves the
report, and prints both).
"""

import pandas as pd
import streamlit as st

st.set_page_config(page_title="floor", layout="wide", initial_sidebar_state="collapsed")
st.title("Carbon report: floor")
st.container(key="headline").markdown("### 28.5 Wh")
st.selectbox("Run", ["floor"])
points = pd.DataFrame({"x": range(48), "power_w": [700 + (i * 37) % 90 for i in range(48)]})
for _ in range(4):
    st.line_chart(points, x="x", y="power_w", height=160)
