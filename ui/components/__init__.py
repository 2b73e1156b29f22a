"""Browser components of the app (Streamlit components v2: HTML/JS/CSS shipped as package data)."""
