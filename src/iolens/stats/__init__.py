"""The statistics every verdict uses, pure and small: `samples` (describe a sample, bootstrap intervals, the rank
test, outliers) and `sequential` (the decision of one comparison: faster, slower, equivalent or undecided, with
the stopping rule's error accounting).  `compare` decides with them and `cost` names ties with the same rule."""
