"""Repositories: queries and row changes on a Session they are given. They never commit."""
