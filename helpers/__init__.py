"""Controllers from Scratch: the finished form of what each chapter builds.

Each module is one component and names its client-go counterpart in its
docstring. Chapters build these step by step; later chapters import them from
here, so the book and the library cannot disagree.
"""
