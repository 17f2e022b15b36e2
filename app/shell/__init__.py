"""The window around the tabs: layout and signals (window.py), dock widths (docks.py), scenario
files (files.py), File → Export (export_menu.py) and the toolbar's scenario picker. Tabs never
import it."""
