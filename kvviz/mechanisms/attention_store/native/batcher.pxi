# (to be written: see _engine.pyx)
