"""`iolens cost`: measured time joined with storage and instance prices (prices, model, Pareto front)."""
