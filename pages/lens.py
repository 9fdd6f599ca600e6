import streamlit as st

st.title("lens (under construction)")
