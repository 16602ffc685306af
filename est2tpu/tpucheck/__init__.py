"""`est2tpu verify --tpu`: runs the user's program once with TPUEstimator's own TPU path on
CPU and reports, at the user's lines, what a TPU would reject.

`run` migrates a copy and runs the program (the code inside the program is
`est2tpu.runtime.tpu_verify`); `catalogue` reads the TPU1xx entries; `output` turns the
result into the report formats of `est2tpu check`.
"""
