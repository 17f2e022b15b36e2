"""Exporters that need no Qt: they read a finished Result and write files."""
