"""How a metric value reads to a person (CLI summary and the app's metrics table)."""


def format_value(v) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "—"}[v]
    if isinstance(v, float):
        text = f"{v:.6g}"
        return text if any(c in text for c in ".eni") else text + ".0"
    return str(v)
