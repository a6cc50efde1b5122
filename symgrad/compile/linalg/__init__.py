"""Linear algebra inside compiled functions (LAPACK on the CPU, cuSOLVER on cuda).
Empty until that work lands."""
