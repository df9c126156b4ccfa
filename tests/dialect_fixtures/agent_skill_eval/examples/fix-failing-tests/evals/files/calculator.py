def mean(xs):
    return sum(xs) / (len(xs) - 1)


def double(x):
    return x + x + 1
