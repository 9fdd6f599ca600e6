import streamlit as st

st.title("linear (under construction)")
