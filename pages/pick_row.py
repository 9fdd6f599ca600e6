import streamlit as st

st.title("pick_row (under construction)")
