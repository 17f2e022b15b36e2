"""Stand-ins for an export's child process (app.export_job runs them in a child of their own)."""


def never_done(conn, *_args):
    """A render that never ends (until Cancel ends its process): a slow export, made certain."""
    import threading
    threading.Event().wait()
