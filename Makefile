# The two commands the README opens with.
.PHONY: test check demo

# Set up from nothing and run all tests.
test:
	bash scripts/test.sh

# The inner loop: lint, types, and the suite without the slow and TensorFlow tests (goal: under a
# minute on 2 cores). Measured: 107 s of CPU (user+sys) for 1,037 tests, about 55 s of wall on 2
# quiet cores; taken on a shared machine at load 8, so the wall time is estimated from the CPU time
# (before: 287 s of CPU, 2 min 26 s of wall on 2 quiet cores).
check:
	EST2TPU_LINT=1 bash scripts/test.sh -q -m "not slow and not tf" -n 2 --dist loadgroup

# Set up, migrate the bundled example, show the diff, train the result on CPU.
demo:
	bash scripts/demo.sh
