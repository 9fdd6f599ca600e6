import streamlit as st

st.title("sev (under construction)")
