"""What-if: replay a step's recorded I/O on other storage (replay), or predict its time there (predict)."""
