"""trainplan's benchmark harness: the only package that imports torch and pynvml (lazily, inside functions)."""
