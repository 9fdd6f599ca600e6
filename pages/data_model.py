import streamlit as st

st.title("data_model (under construction)")
