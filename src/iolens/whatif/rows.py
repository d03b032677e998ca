"""The plan's op rows while it is built: one int64 row per op, in these columns (the rp_op fields, and `seq` to order
ops that start together)."""

T, DUR, OFFSET, SIZE, OP, THREAD, OBJ, FLAGS, SEQ = range(9)
