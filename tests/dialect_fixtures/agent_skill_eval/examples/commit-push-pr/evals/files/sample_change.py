def retry(fn, times=3):
    for _ in range(times):
        try:
            return fn()
        except OSError:
            pass
