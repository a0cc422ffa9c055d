"""What the client scripts share: a call's outcome as the tests read it."""


def error_of(call):
    """The exception `call()` raises, as {"class", "message"}; class None when it raises nothing."""
    try:
        call()
        return {"class": None, "message": "no error"}
    except Exception as error:
        return {"class": type(error).__name__, "message": str(error)}
