"""Operations: name why each failed host failed, write its ticket, rank the golden set, and
find the bad hosts of a failing multi-node job.

Every recurring failure mode deserves a tool that names it: a small team cannot read 500
hosts' logs. Classification and ranking are pure (data in, typed results out); the CLIs and
the report do the file I/O.
"""
